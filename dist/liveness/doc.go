// Package liveness watches that every rank of a job is alive and
// reachable, so that a host whose link went down, or a rank that stopped
// (SIGSTOP, a hung driver), ends the job within a bound instead of
// leaving the others waiting in a collective for ever.
//
// MPI cannot tell a slow peer from a lost one: over TCP, a collective
// with a host whose cable was pulled waits for the kernel's
// retransmissions, many minutes. Start therefore connects every pair of
// ranks with a TCP connection of its own, beside MPI, over which both
// send a heartbeat byte every Interval from a goroutine that runs whatever
// the rank is computing. A rank that hears nothing from a peer for
// Timeout (or sees its connection close: the peer died) calls OnLost with
// a *LostError naming the peer's rank and host. A long evaluation or a
// slow checkpoint on one rank is not a loss: its heartbeats go on.
//
// The connections are made once, at Start, which is collective: the ranks
// exchange their addresses (every non-loopback address of the host, and
// loopback for peers on the same host) through the communicator, each
// rank dials the ranks above it and accepts the ranks below it. A
// connection starts with the job's token (drawn by rank 0), so that a
// stray connection to the port is refused. Start fails, naming the ranks
// it could not reach, when a firewall blocks the ports: the job then
// fails at its start rather than later.
//
// A Monitor also says which peers are silent now (Silent): it is a
// dist.PeerWatcher, which the engine takes as EngineConfig.Peers so that
// its stall warnings and its stall shutdown (dist.EngineConfig's
// StallWarning and StallShutdown, usually shorter than Timeout) name the
// ranks that stopped answering, and their hosts.
package liveness
