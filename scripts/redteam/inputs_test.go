package redteam

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tiny data set every training case uses: 8×8 grey images of 4
// classes, 64 for training and 32 for testing.
const (
	tinyTrain   = 64
	tinyTest    = 32
	tinySide    = 8
	tinyClasses = 4
)

// Names of the files of an IDX data set.
const (
	trainImages = "train-images-idx3-ubyte"
	trainLabels = "train-labels-idx1-ubyte"
	testImages  = "t10k-images-idx3-ubyte"
	testLabels  = "t10k-labels-idx1-ubyte"
)

// path returns the absolute path of rel in the case's folder.
func (e *env) path(rel string) string { return filepath.Join(e.dir, rel) }

// fatalf stops the case: its inputs could not be built (a harness error).
func (e *env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf(format, args...)
}

// must stops the case on err.
func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// write writes content to rel (creating its folders) and returns its path.
func (e *env) write(rel string, content []byte) string {
	e.t.Helper()
	p := e.path(rel)
	e.must(os.MkdirAll(filepath.Dir(p), 0o755))
	e.must(os.WriteFile(p, content, 0o644))
	return p
}

// writeString is write for text.
func (e *env) writeString(rel, content string) string {
	e.t.Helper()
	return e.write(rel, []byte(content))
}

// mkdir creates the folder rel and returns its path.
func (e *env) mkdir(rel string) string {
	e.t.Helper()
	p := e.path(rel)
	e.must(os.MkdirAll(p, 0o755))
	return p
}

// fifo creates a named pipe at rel and returns its path.
func (e *env) fifo(rel string) string {
	e.t.Helper()
	p := e.path(rel)
	e.must(os.MkdirAll(filepath.Dir(p), 0o755))
	e.must(syscall.Mkfifo(p, 0o644))
	return p
}

// symlink creates the link rel pointing at target and returns its path.
func (e *env) symlink(target, rel string) string {
	e.t.Helper()
	p := e.path(rel)
	e.must(os.MkdirAll(filepath.Dir(p), 0o755))
	e.must(os.Symlink(target, p))
	return p
}

// data writes the tiny IDX data set into the folder rel and returns it.
func (e *env) data(rel string) string {
	e.t.Helper()
	dir := e.mkdir(rel)
	e.must(writeTinyData(dir))
	return dir
}

// writeTinyData writes the tiny data set's four IDX files into dir.
func writeTinyData(dir string) error {
	files := map[string][]byte{
		trainImages: idxImages(tinyTrain, tinySide, tinySide, 1),
		trainLabels: idxLabels(tinyTrain),
		testImages:  idxImages(tinyTest, tinySide, tinySide, 2),
		testLabels:  idxLabels(tinyTest),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tinyConfigYAML is a small valid config: an MLP with one hidden layer of
// 8 on the IDX data set in dataDir, one epoch.
func tinyConfigYAML(dataDir string) string {
	return fmt.Sprintf(`data: {name: idx, dir: %q}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
train: {epochs: 1, batch_size: 16}
output: {progress: false, plot: false}
`, dataDir)
}

// tinyConfig writes the tiny data set into data/ and a config reading it
// (with extra appended, YAML of other sections) into rel; it returns the
// config's path.
func (e *env) tinyConfig(rel, extra string) string {
	e.t.Helper()
	data := e.data("data")
	return e.writeString(rel, tinyConfigYAML(data)+extra)
}

// copyTree copies the regular files and folders of src to dst.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(to, 0o755)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
		return nil
	})
}

// run copies the shared tiny run (see sharedRun) to rel and returns it.
func (e *env) run(rel string) string {
	e.t.Helper()
	return e.copyRun(e.h.sharedRun(e.t), rel)
}

// lmRun copies the shared language-model run to rel and returns it.
func (e *env) lmRun(rel string) string {
	e.t.Helper()
	return e.copyRun(e.h.sharedLMRun(e.t), rel)
}

// copyRun copies the run folder src to rel and returns the copy's path.
func (e *env) copyRun(src, rel string) string {
	e.t.Helper()
	dst := e.path(rel)
	e.must(copyTree(src, dst))
	return dst
}

// The checkpoints of the shared run (checkpoint.every_steps 2, 4 steps).
const (
	firstCkpt = "step-00000002"
	lastCkpt  = "step-00000004"
)

// ckpt returns the folder of a checkpoint of a run.
func ckpt(run, name string) string { return filepath.Join(run, "checkpoints", name) }

// sharedRun trains, once, the run the cases copy: the tiny config with a
// checkpoint every 2 steps, so that it holds two checkpoints
// (step-00000002 and step-00000004), best.json and data.json.
func (h *harness) sharedRun(t *testing.T) string {
	h.runOnce.Do(func() {
		dir := filepath.Join(h.dir, "shared")
		data := filepath.Join(dir, "data")
		cfg := filepath.Join(dir, "tiny.yaml")
		h.run = filepath.Join(dir, "run")
		if h.runErr = os.MkdirAll(data, 0o755); h.runErr != nil {
			return
		}
		if h.runErr = writeTinyData(data); h.runErr != nil {
			return
		}
		if h.runErr = os.WriteFile(cfg, []byte(tinyConfigYAML(data)), 0o644); h.runErr != nil {
			return
		}
		h.runErr = h.prepare(t, dir, "train", "-config", cfg, "-set", "checkpoint.every_steps=2", "-out", h.run)
		if h.runErr == nil {
			for _, c := range []string{firstCkpt, lastCkpt} {
				if _, err := os.Stat(filepath.Join(ckpt(h.run, c), "manifest.json")); err != nil {
					h.runErr = fmt.Errorf("the shared run has no checkpoint %s: %w", c, err)
				}
			}
		}
	})
	if h.runErr != nil {
		t.Fatalf("training the shared run: %v", h.runErr)
	}
	return h.run
}

// lmText is the text the language model trains on.
func lmText() string {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards hex bold jinks")
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < 4000 {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// lmConfigYAML is a tiny character-level language model on textFile.
func lmConfigYAML(textFile string) string {
	return fmt.Sprintf(`data: {name: text, files: [%q], val_fraction: 0.1}
model: {name: charlm, context: 16, dim: 8, heads: 2, layers: 1, ff: 16}
optimizer: {name: adam, lr: 0.01}
train: {epochs: 1, batch_size: 32}
sample: {length: 20}
output: {progress: false, plot: false}
`, textFile)
}

// lmConfig writes the text and a language model config reading it into
// rel (with extra appended) and returns the config's path.
func (e *env) lmConfig(rel, extra string) string {
	e.t.Helper()
	text := e.writeString("text/corpus.txt", lmText())
	return e.writeString(rel, lmConfigYAML(text)+extra)
}

// sharedLMRun trains, once, a tiny language model run.
func (h *harness) sharedLMRun(t *testing.T) string {
	h.lmOnce.Do(func() {
		dir := filepath.Join(h.dir, "shared-lm")
		text := filepath.Join(dir, "corpus.txt")
		cfg := filepath.Join(dir, "lm.yaml")
		h.lmRun = filepath.Join(dir, "run")
		if h.lmErr = os.MkdirAll(dir, 0o755); h.lmErr != nil {
			return
		}
		if h.lmErr = os.WriteFile(text, []byte(lmText()), 0o644); h.lmErr != nil {
			return
		}
		if h.lmErr = os.WriteFile(cfg, []byte(lmConfigYAML(text)), 0o644); h.lmErr != nil {
			return
		}
		h.lmErr = h.prepare(t, dir, "train", "-config", cfg, "-out", h.lmRun)
	})
	if h.lmErr != nil {
		t.Fatalf("training the shared language model run: %v", h.lmErr)
	}
	return h.lmRun
}

// prepare runs a command that builds shared inputs, under the cases'
// limits, and returns an error unless it ends with status 0.
func (h *harness) prepare(t *testing.T, dir string, args ...string) error {
	e := &env{t: t, h: h, dir: dir, cwd: dir}
	args[0] = map[string]string{"train": h.train, "onnxcheck": h.onnxcheck}[args[0]]
	r := h.execute(t, e, tcase{}, args)
	if r.exit != 0 {
		return fmt.Errorf("%v: exit %d (%s)\n%s%s", args[1:], r.exit, r.signal, r.stdout, r.stderr)
	}
	return nil
}

// idxHeader is the header of an IDX file of unsigned bytes.
func idxHeader(magic uint32, dims ...uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return b
}

// idxImages returns an IDX images file of n pseudo-random rows×cols images.
func idxImages(n, rows, cols int, seed uint64) []byte {
	b := idxHeader(0x803, uint32(n), uint32(rows), uint32(cols))
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n * rows * cols {
		b = append(b, byte(rng.IntN(256)))
	}
	return b
}

// idxLabels returns an IDX labels file of n labels cycling over the
// tiny data set's classes.
func idxLabels(n int) []byte {
	b := idxHeader(0x801, uint32(n))
	for i := range n {
		b = append(b, byte(i%tinyClasses))
	}
	return b
}

// gz returns b gzipped.
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// writeGzipBomb writes a gzip file that decompresses to header followed
// by size zero bytes, in about size/1000 bytes: gzip members
// of 1 MiB of zeros each (about 1 KB compressed) one after the other,
// which a gzip reader joins into one stream.
func (e *env) writeGzipBomb(rel string, header []byte, size int64) string {
	e.t.Helper()
	p := e.path(rel)
	e.must(os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.Create(p)
	e.must(err)
	defer f.Close()
	w, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	w.Write(header)
	e.must(w.Close())
	const chunk = 1 << 20
	var member bytes.Buffer
	w, _ = gzip.NewWriterLevel(&member, gzip.BestCompression)
	w.Write(make([]byte, chunk))
	e.must(w.Close())
	n := int64(0)
	for ; n+chunk <= size; n += chunk {
		if _, err := f.Write(member.Bytes()); err != nil {
			e.fatalf("writing %s: %v", p, err)
		}
	}
	if n < size {
		w, _ = gzip.NewWriterLevel(f, gzip.BestCompression)
		w.Write(make([]byte, size-n))
		e.must(w.Close())
	}
	return p
}

// pngChunk encodes one PNG chunk with its CRC.
func pngChunk(kind string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, kind...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(kind), data...)))
}

// hugePNG is a small PNG file whose header declares a width×height RGBA
// image: its IDAT holds a few compressed bytes only.
func hugePNG(width, height uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, width)
	ihdr = binary.BigEndian.AppendUint32(ihdr, height)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8 bits, RGBA, deflate, no filter, no interlace
	b = append(b, pngChunk("IHDR", ihdr)...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 1+4*64)) // a row's filter byte and a few pixels
	zw.Close()
	b = append(b, pngChunk("IDAT", z.Bytes())...)
	return append(b, pngChunk("IEND", nil)...)
}

// smallPNG is a valid 8×8 grey PNG.
func smallPNG() []byte {
	img := image.NewGray(image.Rect(0, 0, tinySide, tinySide))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 4)
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// bigPNG is a side×side grey PNG of a gradient (a few KB: its rows
// repeat), slow to decode.
func bigPNG(side int) []byte {
	img := image.NewGray(image.Rect(0, 0, side, side))
	for y := range side {
		row := img.Pix[y*img.Stride : y*img.Stride+side]
		for x := range row {
			row[x] = byte(x)
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// smallRGBAPNG is a valid 8×8 colour PNG with transparency.
func smallRGBAPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, tinySide, tinySide))
	for y := range tinySide {
		for x := range tinySide {
			img.Set(x, y, color.NRGBA{uint8(x * 30), uint8(y * 30), 100, 128})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// hugeBMP is a 54-byte BMP whose header declares a width×height 24-bit
// image with no pixel data.
func hugeBMP(width, height int32) []byte {
	le := binary.LittleEndian
	b := []byte("BM")
	b = le.AppendUint32(b, 54)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 54) // pixel data offset
	b = le.AppendUint32(b, 40) // BITMAPINFOHEADER
	b = le.AppendUint32(b, uint32(width))
	b = le.AppendUint32(b, uint32(height))
	b = le.AppendUint16(b, 1)  // planes
	b = le.AppendUint16(b, 24) // bits per pixel
	b = le.AppendUint32(b, 0)  // no compression
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 2835)
	b = le.AppendUint32(b, 2835)
	b = le.AppendUint32(b, 0)
	return le.AppendUint32(b, 0)
}

// nestingBomb is YAML of depth nested flow sequences under key.
func nestingBomb(key string, depth int) string {
	return key + ": " + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n"
}

// aliasBomb is a "billion laughs" YAML document of about 1 MB: a first
// anchor of width strings, then levels of anchors each naming the one
// before ten times, the last under key.
func aliasBomb(key string, width, levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [")
	for i := range width {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("lol")
	}
	b.WriteString("]\n")
	for l := 1; l <= levels; l++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", l-1), 10), ", ")
		if l == levels {
			fmt.Fprintf(&b, "%s: [%s]\n", key, refs)
		} else {
			fmt.Fprintf(&b, "a%d: &a%d [%s]\n", l, l, refs)
		}
	}
	return b.String()
}

// garbage returns n pseudo-random bytes.
func garbage(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// editJSON rewrites the JSON object in path through edit.
func (e *env) editJSON(path string, edit func(m map[string]any)) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	e.must(err)
	var m map[string]any
	e.must(json.Unmarshal(b, &m))
	edit(m)
	out, err := json.MarshalIndent(m, "", "  ")
	e.must(err)
	e.must(os.WriteFile(path, out, 0o644))
}

// manifestFiles returns the "files" object of a parsed manifest.
func manifestFiles(e *env, m map[string]any) map[string]any {
	e.t.Helper()
	files, ok := m["files"].(map[string]any)
	if !ok {
		e.fatalf("manifest without a files object: %v", m)
	}
	return files
}

// redigest records the current size and SHA-256 of a checkpoint's file
// in its manifest, so that a file edited on purpose passes verification.
func (e *env) redigest(ckptDir, file string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(ckptDir, file))
	e.must(err)
	sum := sha256.Sum256(b)
	e.editJSON(filepath.Join(ckptDir, "manifest.json"), func(m map[string]any) {
		manifestFiles(e, m)[file] = map[string]any{"size": len(b), "sha256": hex.EncodeToString(sum[:])}
	})
}

// safetensorsF32 calls fn with the data bytes of every F32 tensor of a
// safetensors file, then writes the file back.
func (e *env) safetensorsF32(path string, fn func(name string, data []byte)) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	e.must(err)
	if len(b) < 8 {
		e.fatalf("%s: not a safetensors file", path)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		e.fatalf("%s: header of %d bytes", path, n)
	}
	var header map[string]json.RawMessage
	e.must(json.Unmarshal(b[8:8+n], &header))
	data := b[8+n:]
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			DType   string `json:"dtype"`
			Offsets [2]int `json:"data_offsets"`
		}
		e.must(json.Unmarshal(raw, &info))
		if info.DType == "F32" {
			fn(name, data[info.Offsets[0]:info.Offsets[1]])
		}
	}
	e.must(os.WriteFile(path, b, 0o644))
}

// fillNaN sets every float32 of b to NaN.
func fillNaN(_ string, b []byte) {
	for i := 0; i+4 <= len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], 0x7fc00000)
	}
}

// flipByte changes one byte in the middle of the file at path.
func (e *env) flipByte(path string) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	e.must(err)
	b[len(b)/2] ^= 0xff
	e.must(os.WriteFile(path, b, 0o644))
}

// trickle writes header, then one zero byte every 50 ms, to the named
// pipe path until the case ends. The pipe is opened read-write, so that
// neither side waits for the other to open it.
func (e *env) trickle(path string, header []byte) {
	e.t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	e.must(err)
	done := make(chan struct{})
	e.t.Cleanup(func() { close(done); f.Close() })
	go func() {
		f.Write(header)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := f.Write([]byte{0}); err != nil {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

// readAllFile reads a file, or returns "" when it cannot.
func readAllFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return string(b)
}
