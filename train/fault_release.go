//go:build !horafault

package train

// faultInjection says whether HORA_FAULT is read (build tag horafault).
const faultInjection = false

// faultCrash is never called in a release build: faultStep stays 0.
func faultCrash() {}
