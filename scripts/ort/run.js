#!/usr/bin/env node
// Runs an ONNX model in onnxruntime (CPU execution provider) for Hora's
// round-trip tests (onnx/export_test.go).
//
// Usage: node scripts/ort/run.js < request.json > response.json
//
// The request is one JSON object:
//   {"model": "/path/model.onnx",
//    "inputs": {"input": {"type": "float32", "dims": [2, 3], "data": [...]}},
//    "threads": 1}                       (optional: intra-op threads)
// Types are float32, float64 and int64 (int64 data as JSON numbers).
// The response has every output of the model in the same form:
//   {"outputs": {"output": {"type": "float32", "dims": [2, 10], "data": [...]}}}
// A request {"runs": [request, ...]} runs several models in one process
// (loading onnxruntime once) and answers {"results": [response, ...]},
// where a failed run's response is {"error": "message"}.
// Float values are written with full double precision, so float32 values
// travel exactly. Errors go to stderr with exit status 1.
'use strict';

const ort = require('onnxruntime-node');

const arrays = {
  float32: (d) => Float32Array.from(d),
  float64: (d) => Float64Array.from(d),
  int64: (d) => BigInt64Array.from(d, (v) => BigInt(v)),
};

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (c) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

async function runOne(req) {
  const opts = { executionProviders: ['cpu'], graphOptimizationLevel: 'all' };
  if (req.threads) {
    opts.intraOpNumThreads = req.threads;
  }
  const session = await ort.InferenceSession.create(req.model, opts);
  const feeds = {};
  for (const [name, t] of Object.entries(req.inputs || {})) {
    const make = arrays[t.type];
    if (!make) {
      throw new Error(`input ${name}: unsupported type ${t.type} (want float32, float64 or int64)`);
    }
    feeds[name] = new ort.Tensor(t.type, make(t.data), t.dims);
  }
  const results = await session.run(feeds);
  const outputs = {};
  for (const [name, t] of Object.entries(results)) {
    const data = t.type === 'int64' || t.type === 'uint64'
      ? Array.from(t.data, (v) => Number(v))
      : Array.from(t.data, (v) => (typeof v === 'boolean' ? Number(v) : v));
    outputs[name] = { type: t.type, dims: Array.from(t.dims), data };
  }
  return { outputs };
}

async function main() {
  const req = JSON.parse(await readStdin());
  if (!Array.isArray(req.runs)) {
    process.stdout.write(JSON.stringify(await runOne(req)));
    return;
  }
  const results = [];
  for (const r of req.runs) {
    try {
      results.push(await runOne(r));
    } catch (err) {
      results.push({ error: String(err && err.message ? err.message : err) });
    }
  }
  process.stdout.write(JSON.stringify({ results }));
}

main().catch((err) => {
  process.stderr.write(`run.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
