// Package redteam is the red-team corpus of the train and onnxcheck
// commands: hostile and careless inputs (configs, IDX files, checkpoints
// and manifests, ONNX files, images, output paths) that once made them
// panic, hang, run out of memory, succeed silently with a wrong result,
// or overwrite files they should not, kept as a test so that those
// defects stay fixed.
//
// The package has no code of its own: the corpus and its runner are its
// test. It builds cmd/train (without the mpi tag) and cmd/onnxcheck into
// a temporary folder, then runs every case as a child process in a fresh
// temporary folder of its own, under a memory limit (bash's ulimit -v),
// a time limit per case (its process group is killed at the limit) and
// GOMAXPROCS=2, two cases at a time. The inputs are generated at test
// time, bombs included, so nothing big is committed. Each case wants
// one verdict: a clear error (exit status 2, or what the command
// documents, and a message naming the file, key or tensor and the
// problem) or a correct result (exit 0 and a check of the output). The
// result of a case is one of
//
//	clear error, correct    what a case may want
//	unclear                 a wrong exit status, or a message that does not say what is wrong
//	panic                   a Go panic or fatal error (they exit with status 2 too)
//	hang                    the time limit passed (or the process outlived a SIGTERM)
//	OOM                     the memory limit, or a kill by signal
//	silent                  exit 0 where an error was due, or a wrong output
//	data loss               a file the case protects changed or vanished
//
// and the test fails when a case ends with a verdict it does not want.
// It prints a table of the verdicts and a line per failing case, with
// the end of its stdout (">") and stderr ("|"); run with -v to see it
// when the test passes, and each case's output.
//
// A case's comment says what it checks and which defect it is; "Added"
// marks the cases beyond the red team's report.
//
// Run it with
//
//	go test ./scripts/redteam/                          # every case
//	go test ./scripts/redteam/ -run 'TestRedteam/export_o_fifo' -v
//	REDTEAM_REPORT_ONLY=1 go test -v ./scripts/redteam/ # report, do not fail
//
// REDTEAM_REPORT_ONLY=1 prints the verdicts without failing on wrong
// ones (while the defects are being fixed); REDTEAM_REPORT=FILE also
// writes the report to FILE. The test is skipped with -short.
package redteam
