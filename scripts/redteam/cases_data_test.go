package redteam

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// trainOn writes the tiny data set into data/, lets change edit it, and
// trains the tiny config on it.
func trainOn(e *env, change func(dir string)) []string {
	e.t.Helper()
	dir := e.data("data")
	change(dir)
	cfg := e.writeString("c.yaml", tinyConfigYAML(dir))
	return []string{"train", "-config", cfg, "-out", e.path("run")}
}

// dataCases are hostile or careless data files.
func dataCases() []tcase {
	return []tcase{
		{
			// A gzip bomb: a 4 MB train-images-idx3-ubyte.gz whose header
			// declares 60 million 8×8 images (3.84 GB, under the reader's
			// 4 GiB cap) and which inflates to that many zeros.
			name: "idx_gzip_bomb",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainImages)))
					e.writeGzipBomb("data/"+trainImages+".gz", idxHeader(0x803, 60000000, tinySide, tinySide), 60000000*tinySide*tinySide)
				})
			},
			msg: []string{trainImages + `\.gz`, sizeProblemRE},
		},
		{
			// The same bomb declaring 16 million images (1.02 GB, under a
			// cap of 1 GiB), with as many labels: the bytes and their float32 copy (5 GB in
			// all) do not fit in the memory limit. A clear error (status
			// 1 or 2) that says how much memory the data needs, not an
			// out-of-memory death. (Added: the data set is valid, only
			// too big for the machine.)
			name: "idx_gzip_bomb_under_cap",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainImages)))
					e.writeGzipBomb("data/"+trainImages+".gz", idxHeader(0x803, 16000000, tinySide, tinySide), 16000000*tinySide*tinySide)
					e.must(os.Remove(filepath.Join(dir, trainLabels)))
					e.writeGzipBomb("data/"+trainLabels+".gz", idxHeader(0x801, 16000000), 16000000)
				})
			},
			msg:   []string{trainImages + `\.gz`, sizeProblemRE},
			exits: []int{1, 2},
		},
		{
			// A gzipped IDX file of 64 images followed by 64 GB of
			// zeros in 64 MB: the error ("trailing data") must come
			// without inflating them all. (Added: a time bomb.)
			name: "idx_gzip_trailing_bomb",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainImages)))
					images := idxImages(tinyTrain, tinySide, tinySide, 1)
					e.writeGzipBomb("data/"+trainImages+".gz", images, 64<<30)
				})
			},
			msg: []string{trainImages + `\.gz`, `(?i)trailing|more data|longer|extra`},
		},
		{
			// A raw IDX file whose header declares more than the reader's
			// cap: refused before any allocation.
			name: "idx_raw_huge_header",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.write("data/"+trainImages, idxHeader(0x803, 4000000000, tinySide, tinySide))
				})
			},
			msg: []string{trainImages, `(?i)limit|too large|header`},
		},
		{
			// An IDX file cut short.
			name: "idx_truncated",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.write("data/"+trainImages, idxImages(tinyTrain, tinySide, tinySide, 1)[:1000])
				})
			},
			msg: []string{trainImages, `(?i)truncated`},
		},
		{
			// 64 images and 60 labels.
			name: "idx_count_mismatch",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) { e.write("data/"+trainLabels, idxLabels(60)) })
			},
			msg: []string{trainLabels, `60`, `64`},
		},
		{
			// Labels beyond model.classes.
			name: "idx_labels_beyond_classes",
			setup: func(e *env) []string {
				return append(trainOn(e, func(string) {}), "-set", "model.classes=2")
			},
			msg: []string{`(?i)label`, `train-labels-idx1-ubyte|model\.classes`},
		},
		{
			// An empty test set (t10k files of 0 samples): an error, not
			// a test loss of 0.
			name: "empty_test_set",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.write("data/"+testImages, idxHeader(0x803, 0, tinySide, tinySide))
					e.write("data/"+testLabels, idxHeader(0x801, 0))
				})
			},
			msg: []string{`t10k-images-idx3-ubyte|test set`, `(?i)no (samples|images)|empty|\b0 (samples|images)`},
		},
		{
			// An empty training set.
			name: "empty_train_set",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.write("data/"+trainImages, idxHeader(0x803, 0, tinySide, tinySide))
					e.write("data/"+trainLabels, idxHeader(0x801, 0))
				})
			},
			msg: []string{`train-images-idx3-ubyte|training set`, `(?i)no (samples|images)|empty|\b0 (samples|images)`},
		},
		{
			// A folder where a data file belongs: the message says "is a
			// directory", not that the file is missing.
			name: "data_file_is_directory",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainLabels)))
					e.mkdir("data/" + trainLabels)
				})
			},
			msg: []string{trainLabels, `(?i)is a directory`},
		},
		{
			// A data file that is a link to /dev/zero (read only): four
			// zero bytes are no IDX magic.
			name: "data_file_dev_zero",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainImages)))
					e.symlink("/dev/zero", "data/"+trainImages)
				})
			},
			msg: []string{trainImages, `(?i)magic|not a regular file|device`},
		},
		{
			// Raw IDX files and different gzipped ones beside them (48
			// samples instead of 64): training works, and the output
			// says which files were read.
			name: "idx_raw_and_gz_beside",
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.write("data/"+trainImages+".gz", gz(idxImages(48, tinySide, tinySide, 9)))
					e.write("data/"+trainLabels+".gz", gz(idxLabels(48)))
				})
			},
			ok: func(e *env, r *result) error {
				if err := trained(e, r); err != nil {
					return err
				}
				out := r.stdout + r.stderr + readAllFile(e.path("run/train.log"))
				if !regexp.MustCompile(trainImages).MatchString(out) {
					return fmt.Errorf("the output does not say which of %s and %s.gz was read", trainImages, trainImages)
				}
				return nil
			},
		},
		{
			// A data file that is a named pipe fed one byte every 50 ms
			// (a slow load), and one SIGTERM after 2 s: the command must
			// end at once, interrupted (130), or refuse the pipe (2).
			name:    "data_file_fifo_sigterm",
			sigterm: 2 * time.Second,
			setup: func(e *env) []string {
				return trainOn(e, func(dir string) {
					e.must(os.Remove(filepath.Join(dir, trainImages)))
					e.trickle(e.fifo("data/"+trainImages), idxHeader(0x803, tinyTrain, tinySide, tinySide))
				})
			},
			okExit: 130,
			ok:     stderrMatches(`(?i)interrupt`),
			msg:    []string{trainImages, notRegularRE},
		},
		{
			// One SIGTERM while 300 PNG images of 4000×4000 pixels are
			// decoded (several seconds): the command must end at once,
			// interrupted (130), not when the decoding is done.
			name:    "sigterm_during_image_load",
			sigterm: 1500 * time.Millisecond,
			setup: func(e *env) []string {
				big := bigPNG(4000)
				for i := range 300 {
					e.write(fmt.Sprintf("img/train/%c/%03d.png", 'a'+i%2, i), big)
				}
				cfg := e.writeString("c.yaml", `data: {name: images, dir: "`+e.path("img")+`", image_size: [8, 8], channels: 1}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
train: {epochs: 1, batch_size: 16}
output: {progress: false, plot: false}
`)
				return []string{"train", "-config", cfg, "-out", e.path("run")}
			},
			okExit: 130,
			ok:     stderrMatches(`(?i)interrupt`),
		},
		{
			// Data set "images" whose first training image is a PNG that
			// declares 60000×60000 pixels.
			name: "images_png_bomb",
			setup: func(e *env) []string {
				e.write("img/train/a/big.png", hugePNG(60000, 60000))
				e.write("img/train/b/ok.png", smallPNG())
				e.write("img/val/a/ok.png", smallPNG())
				e.write("img/val/b/ok.png", smallPNG())
				cfg := e.writeString("c.yaml", `data: {name: images, dir: "`+e.path("img")+`"}
model: {name: mlp, hidden: [8]}
optimizer: {name: sgd, lr: 0.1}
train: {epochs: 1, batch_size: 2}
output: {progress: false, plot: false}
`)
				return []string{"train", "-config", cfg, "-out", e.path("run")}
			},
			msg: []string{`big\.png`, `(?i)too (large|big)|dimensions|60000|pixels`},
		},
		{
			// data.dir names no folder.
			name: "data_dir_missing",
			setup: func(e *env) []string {
				return append(trainSet(e), "-set", "data.dir="+e.path("nowhere"))
			},
			msg: []string{`nowhere`, `(?i)no such file|does not exist|missing|not found`},
		},
	}
}
