// Command train trains a Hora model described by a YAML config.
//
// Usage:
//
//	train -config FILE [-set key=value ...] [-out DIR] [-cpuprofile FILE]
//
// It evaluates on the test set after every epoch, appends one JSON object
// per epoch to DIR/metrics.jsonl and saves the weights to
// DIR/model.safetensors. A bad config, flag or data file exits with status
// 2 and a message naming the file and line; other failures exit with 1.
package main
