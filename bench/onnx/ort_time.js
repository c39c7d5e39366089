#!/usr/bin/env node
// ort_time.js times inference of an ONNX model with onnxruntime (CPU) and
// prints one JSON line, for bench/onnx (the Go side runs it in the same run
// and prints Hora and onnxruntime side by side):
//
//   node bench/onnx/ort_time.js MODEL.onnx BATCH [MIN_MS] [THREADS]
//   {"framework":"ort","model":"resnet18.onnx","batch":1,"ms":12.3,"runs":40,...}
//
// The model's first input is fed N(0,1)-ish float32 values of shape
// [BATCH, ...] (the other dimensions from the model, which must be static).
// After 3 warm-up runs it runs until MIN_MS (default 2000) have passed and at
// least 5 runs are done, and reports the median time of one run in ms.
// THREADS (default 2, like Hora on this machine) is intraOpNumThreads; one
// inter-op thread, sequential execution, all graph optimizations.
//
// onnxruntime-node comes from scripts/ort (npm install --ignore-scripts
// there; see its package.json).
'use strict';

const path = require('path');

function usage(msg) {
  process.stderr.write(`ort_time.js: ${msg}\nusage: node ort_time.js MODEL.onnx BATCH [MIN_MS] [THREADS]\n`);
  process.exit(2);
}

async function main() {
  const [model, batchArg, minArg, threadsArg] = process.argv.slice(2);
  if (!model || !batchArg) usage('need MODEL.onnx and BATCH');
  const batch = Number(batchArg);
  const minMs = minArg === undefined ? 2000 : Number(minArg);
  const threads = threadsArg === undefined ? 2 : Number(threadsArg);
  if (!Number.isInteger(batch) || batch < 1) usage(`BATCH ${batchArg}: expected a positive integer`);
  if (!(minMs >= 0)) usage(`MIN_MS ${minArg}: expected a number of milliseconds`);
  if (!Number.isInteger(threads) || threads < 1) usage(`THREADS ${threadsArg}: expected a positive integer`);

  let ort;
  try {
    ort = require(path.join(__dirname, '..', '..', 'scripts', 'ort', 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    process.stderr.write(`ort_time.js: onnxruntime-node is missing (cd scripts/ort && npm install --ignore-scripts): ${e.message}\n`);
    process.exit(3);
  }

  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const name = session.inputNames[0];
  const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : undefined;
  let dims = meta && meta.shape ? meta.shape.slice() : null;
  if (!dims) usage(`${model}: cannot read the shape of input ${name}`);
  dims[0] = batch;
  for (let i = 1; i < dims.length; i++) {
    if (typeof dims[i] !== 'number' || dims[i] < 1) usage(`${model}: input ${name} dimension ${i} is dynamic (${dims[i]})`);
  }
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; i++) {
    // xorshift, then a sum of uniforms: deterministic, roughly N(0,1)
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    data[i] = ((s >>> 0) / 4294967296 - 0.5) * 3.4;
  }
  const feeds = { [name]: new ort.Tensor('float32', data, dims) };

  for (let i = 0; i < 3; i++) await session.run(feeds);
  const times = [];
  const start = process.hrtime.bigint();
  for (;;) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    const t1 = process.hrtime.bigint();
    times.push(Number(t1 - t0) / 1e6);
    if (times.length >= 5 && Number(t1 - start) / 1e6 >= minMs) break;
  }
  times.sort((a, b) => a - b);
  const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
  process.stdout.write(JSON.stringify({
    framework: 'ort', version: ort.env.versions ? ort.env.versions.common : undefined,
    model: path.basename(model), batch, threads, ms: median, runs: times.length,
  }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`ort_time.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
