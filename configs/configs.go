// Package configs holds the shipped training configurations (the YAML
// files of this folder) for Go code that needs them where the repository
// is not at hand: the benchmarks build their models and optimizers from
// them, so that a learning rate is written in one place.
package configs

import "embed"

// Files holds the *.yaml files of this folder.
//
//go:embed *.yaml
var Files embed.FS
