//go:build !unix

package diskcache

// Lock does nothing where there is no flock: concurrent processes may then
// do the same work twice.
func Lock(string) (unlock func()) { return func() {} }
