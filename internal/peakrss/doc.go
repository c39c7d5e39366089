// Package peakrss reads the largest resident memory of this process, the
// figure train logs as peak_rss_mib and hora-bench reports as peak memory.
package peakrss
