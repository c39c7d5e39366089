package train

//go:generate go run ./internal/genconfigref

// ConfigReference returns the Markdown reference of the configuration file
// (docs/config.md): a "General" table of the top-level keys, then one
// table per section (data, model, optimizer, ...), each row giving the
// dotted key, its type, its default (from DefaultConfig) and its meaning
// (the field's doc comment in config.go). go generate writes it.
func ConfigReference() string { return configReference }
