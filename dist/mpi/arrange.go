//go:build mpi && cgo

package mpi

import (
	"context"
	"fmt"
	"os"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/shm"
)

// arrange is Arrange once the mode is known.
func arrange(ctx context.Context, c dist.Communicator, mode string) (dist.Communicator, error) {
	w, ok := c.(*Comm)
	if !ok || w.Size() < 2 || os.Getenv("HORA_SHM") == "0" {
		return c, nil
	}
	layout, err := shm.LayoutOf(ctx, w, w.LocalRank(), w.LocalSize())
	if err != nil {
		return nil, err
	}
	switch {
	case layout.Hosts == 1:
		// Ranks that share this host reduce through shared memory.
		s, err := shm.Wrap(ctx, w, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hora: rank %d: reducing through MPI only: %v\n", w.Rank(), err)
			return c, nil
		}
		return s, nil
	case mode == "off" || layout.Most == 1:
		return c, nil
	}
	return hierarchical(ctx, w, layout)
}

// hierarchical returns w wrapped in the hierarchical allreduce: shared
// memory on each host, and between the hosts one communicator per host
// rank below the fewest ranks a host holds, each with that rank of every
// host.
func hierarchical(ctx context.Context, w *Comm, layout shm.Layout) (dist.Communicator, error) {
	host, err := w.SplitHost()
	if err != nil {
		return nil, err
	}
	color := -1
	if host.Rank() < layout.Fewest {
		color = host.Rank()
	}
	cross, err := w.Split(color, w.Rank())
	if err != nil {
		host.Close()
		return nil, err
	}
	l := shm.Levels{World: w, Host: host, Shares: layout.Fewest}
	if cross != nil {
		l.Cross = cross
	}
	h, err := shm.WrapHierarchical(ctx, l, 0)
	if err != nil {
		if cross != nil {
			cross.Close()
		}
		host.Close()
		fmt.Fprintf(os.Stderr, "hora: rank %d: reducing through MPI only: %v\n", w.Rank(), err)
		return w, nil
	}
	return h, nil
}

// isComm reports whether c is an MPI communicator.
func isComm(c dist.Communicator) bool {
	_, ok := c.(*Comm)
	return ok
}
