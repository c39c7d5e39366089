package shm

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
)

// twoRanks returns two local ranks wrapped in shared memory.
func twoRanks(t *testing.T) [2]*comm {
	t.Helper()
	ranks, err := local.New(2)
	require.NoError(t, err)
	var out [2]*comm
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Go(func() {
			c, err := Wrap(context.Background(), ranks[r], 0)
			errs[r] = err
			if err == nil {
				out[r] = c.(*comm)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return out
}

// TestPeerGoneCountsArrivals checks the decision a waiting rank makes
// when it finds a peer closed: an error when the peer left before
// arriving, none when it arrived and then closed, even though the waiting
// rank read the count before the peer's arrival (the race that failed a
// 2-rank run at its very end).
func TestPeerGoneCountsArrivals(t *testing.T) {
	for _, arrived := range []bool{false, true} {
		c := twoRanks(t)
		// Rank 1 arrives first and reads the count: not everyone yet.
		c[1].seq++
		target := uint32(c[1].seq * 2)
		c[1].count.Add(1)
		if arrived {
			require.NoError(t, c[0].barrier(context.Background()))
		}
		require.NoError(t, c[0].Close())
		err := c[1].peerGone(target)
		if arrived {
			assert.NoError(t, err, "rank 0 arrived before it closed")
		} else {
			var re *dist.RankError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, 0, re.Rank)
			assert.ErrorIs(t, err, dist.ErrClosed)
		}
		c[1].Close()
	}
}
