package dist_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/local"
)

func TestBroadcastBytes(t *testing.T) {
	// Lengths that are and are not whole words, and empty.
	for _, n := range []int{0, 1, 7, 8, 9, 1000} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7 + 3)
		}
		errs := local.Run(3, func(c dist.Communicator) error {
			var b []byte
			if c.Rank() == 1 {
				b = want
			} else {
				b = []byte("stale copy of this rank")
			}
			got, err := dist.BroadcastBytes(context.Background(), c, b, 1)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("rank %d: got %d bytes %x, want %d bytes", c.Rank(), len(got), got[:min(len(got), 8)], n)
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("%d bytes: rank %d: %v", n, r, err)
			}
		}
	}
}

func TestAllgatherBytes(t *testing.T) {
	errs := local.Run(3, func(c dist.Communicator) error {
		mine := bytes.Repeat([]byte{byte('a' + c.Rank())}, 5*c.Rank()+1) // 1, 6, 11 bytes
		all, err := dist.AllgatherBytes(context.Background(), c, mine)
		if err != nil {
			return err
		}
		for r := range 3 {
			want := bytes.Repeat([]byte{byte('a' + r)}, 5*r+1)
			if !bytes.Equal(all[r], want) {
				return fmt.Errorf("rank %d sees rank %d's bytes as %q, want %q", c.Rank(), r, all[r], want)
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
