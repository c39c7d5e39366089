// Package direct holds the micro-kernel of Hora's direct convolution: a
// block of Rows output channels × Cols output positions accumulated in
// registers over every input channel and kernel tap, reading the input
// where it lies instead of through an im2col copy.
//
// The caller lays each input channel out flat so that every tap is a
// constant shift: output position q (of a plane cut to rows of a fixed
// width, padding and stride phases included, see package cpu) reads tap t
// at in[c·cstride + taps[t] + q]. The kernel then computes
//
//	out[r·ldo + q] = Σ_c Σ_t w[(c·len(taps) + t)·Rows + r] · in[c·cstride + taps[t] + q]
//
// for r < Rows and q < Cols, the weights packed Rows output channels at a
// time. On amd64 with AVX-512 it keeps the 8×48 block in 24 registers (an
// input vector feeds 8 multiply-adds, a weight 3); elsewhere it runs in Go.
// RowsPlan.BlockRange runs a range of the same blocks with their bias
// and clamp applied, stored straight into the output planes (rows of the
// phase width go to rows of the output width, two masked stores per
// vector).
//
// VecBlocks turns the block around for small planes: 16 output channels
// in two AVX2 vectors × 6 output positions, each input value a (channel,
// tap) pair reads broadcast, the positions listed one by one (any rows,
// any images), so that a 7×7 plane's 49 outputs fill its blocks;
// VecBlocksAdd, its sums going on from the output's values, computes
// weight gradients with the roles swapped (the vectors hold output
// gradients, the sums are pairs).
//
// The depthwise kernels of MobileNet's layers read a plane in place,
// without a padded copy: SamePlan for unit stride and output rows as wide
// as the input's (one masked load per tap and vector, or, for kernel rows
// 3 wide on planes about 52 or more wide, row by row with one load per
// kernel row and vector, shifted a column either way in registers; also
// the weight gradient, TapDots and TapDotsImages), Stride2Plan for a horizontal
// stride of 2 with 3-wide kernel rows (even and odd columns split in
// registers). SamePlan.RunPlanes and Stride2Plan.RunRows take a run of
// planes or output rows per call, two at a time. Stride2Plan.RunBlock
// computes a row of a full convolution with the same loads, 16 output
// channels at a time in registers, for a stem of few input channels.
//
// The package also holds the depthwise kernel (Depthwise) and the strided
// copies that lay planes out for these kernels and back, one call per
// plane instead of one per row: CopyRows, PadRows (which zeroes the
// padding between rows), SplitColumns (the even and odd columns of a
// stride-2 convolution's phases), and for im2col and col2im of stride-2
// layers AddRows (a strided add) and MergeColumnsAdd (SplitColumns
// backwards, adding; MergeColumns without adding gathers a stride-2
// depthwise layer's input gradient from its phases). SamePlan.Im2col writes the column matrix of a
// same-size convolution with the plan's masks, and SamePlan.Col2im adds it
// back, each input gathering its taps (AVX2 on every amd64 CPU).
//
// On CPUs with AVX2 but not AVX-512, Block (BlockCols), GradBlock,
// Depthwise, RowChannelsLast, SplitColumns, CopyRows, PadRows,
// CopyRowsBiasClamp, AddRows, MergeColumnsAdd and SamePlan.Im2col run AVX2
// assembly (avx2_amd64.s, channelslast_avx2_amd64.s): Block in four passes
// of 4 rows × 24 positions, GradBlock in four passes of 2 rows × 3 pairs
// over chunks of 512 positions, with the AVX-512 kernels' bits where the
// order of operations allows (TestAVX2MatchesAVX512). The plans' in-place
// convolution kernels and RowsPlan run in Go there (Fast, FastBlocks and
// HaveCol2im say what runs in assembly).
package direct
