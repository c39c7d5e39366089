// Package layering holds the test that enforces the import direction
// between Hora's packages (see ARCHITECTURE.md): a package may import
// only the packages listed for it in allowedImports. It has no code of
// its own.
package layering
