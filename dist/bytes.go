package dist

import (
	"context"
	"fmt"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu"
)

// MaxBytesMessage is the largest message BroadcastBytes and
// AllgatherBytes move: 4 GiB, far above a checkpoint's files but a bound
// on what a corrupt length could make a rank allocate.
const MaxBytesMessage = 4 << 30

// BroadcastBytes sends root's b to every rank: it returns b on root and a
// copy of it on the others (whose b is ignored). It is collective: every
// rank calls it with the same root. It lets one rank read a file (a
// config, a checkpoint) that only its host has and share it with ranks on
// other hosts.
func BroadcastBytes(ctx context.Context, c Communicator, b []byte, root int) ([]byte, error) {
	if c.Size() == 1 {
		return b, nil
	}
	n := int64(len(b))
	if c.Rank() == root && n > MaxBytesMessage {
		n = -1 // tell the others, then fail on every rank
	}
	n, err := broadcastInt64(ctx, c, n, root)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > MaxBytesMessage {
		return nil, fmt.Errorf("dist: broadcast of %d bytes from rank %d exceeds the limit of %d", len(b), root, int64(MaxBytesMessage))
	}
	buf, err := cpu.Default().Alloc(device.Int64, int(max((n+7)/8, 1)))
	if err != nil {
		return nil, err
	}
	defer buf.Free()
	words := wordBytes(buf)
	if c.Rank() == root {
		copy(words, b)
	}
	if err := c.Broadcast(ctx, buf, root); err != nil {
		return nil, err
	}
	if c.Rank() == root {
		return b, nil
	}
	return append([]byte(nil), words[:n]...), nil
}

// AllgatherBytes returns every rank's b, in rank order, on every rank.
// It is collective; the ranks' slices may differ in length (each at most
// MaxBytesMessage / Size bytes).
func AllgatherBytes(ctx context.Context, c Communicator, b []byte) ([][]byte, error) {
	if c.Size() == 1 {
		return [][]byte{b}, nil
	}
	size := c.Size()
	// First every rank's length, then every rank's bytes padded to the
	// longest.
	lens, err := cpu.Default().Alloc(device.Int64, size)
	if err != nil {
		return nil, err
	}
	defer lens.Free()
	one, err := cpu.Default().Alloc(device.Int64, 1)
	if err != nil {
		return nil, err
	}
	defer one.Free()
	one.(*cpu.Buffer).Int64s()[0] = int64(len(b))
	if err := c.Allgather(ctx, lens, one); err != nil {
		return nil, err
	}
	var longest int64
	for r, n := range lens.(*cpu.Buffer).Int64s() {
		if n < 0 || n > MaxBytesMessage/int64(size) {
			return nil, fmt.Errorf("dist: allgather: rank %d sends %d bytes, above the limit of %d", r, n, MaxBytesMessage/int64(size))
		}
		longest = max(longest, n)
	}
	words := int(max((longest+7)/8, 1))
	src, err := cpu.Default().Alloc(device.Int64, words)
	if err != nil {
		return nil, err
	}
	defer src.Free()
	dst, err := cpu.Default().Alloc(device.Int64, words*size)
	if err != nil {
		return nil, err
	}
	defer dst.Free()
	copy(wordBytes(src), b)
	if err := c.Allgather(ctx, dst, src); err != nil {
		return nil, err
	}
	all := wordBytes(dst)
	out := make([][]byte, size)
	for r, n := range lens.(*cpu.Buffer).Int64s() {
		part := all[r*words*8:]
		out[r] = append([]byte(nil), part[:n]...)
	}
	return out, nil
}

// broadcastInt64 broadcasts one number from root.
func broadcastInt64(ctx context.Context, c Communicator, v int64, root int) (int64, error) {
	buf, err := cpu.Default().Alloc(device.Int64, 1)
	if err != nil {
		return 0, err
	}
	defer buf.Free()
	buf.(*cpu.Buffer).Int64s()[0] = v
	if err := c.Broadcast(ctx, buf, root); err != nil {
		return 0, err
	}
	return buf.(*cpu.Buffer).Int64s()[0], nil
}

// wordBytes returns the bytes of an Int64 CPU buffer (a view).
func wordBytes(b device.Buffer) []byte { return b.(*cpu.Buffer).Bytes() }
