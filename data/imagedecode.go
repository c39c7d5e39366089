package data

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // register GIF for DecodeImage
	_ "image/jpeg" // register JPEG
	_ "image/png"  // register PNG
	"io"
	"os"
	"strings"

	_ "golang.org/x/image/bmp" // register BMP
	"golang.org/x/image/riff"
	"golang.org/x/image/vp8"
	"golang.org/x/image/vp8l"
	_ "golang.org/x/image/webp" // register WebP
)

// MaxImagePixels is the largest image, in pixels (width × height), that
// DecodeImage accepts: 2²⁶, an 8192×8192 image, which takes 256 MiB as
// RGBA (512 MiB at 16 bits a channel) once decoded. The size an image file
// declares is checked before its pixels are decoded, so that a small file
// declaring a huge image (a 3.5 MB PNG of 60000×60000 pixels would take
// 3.6 GB) is refused instead of exhausting memory. The same bound applies
// to each image of an IDX images file.
const MaxImagePixels = 1 << 26

// imageFormats names the formats DecodeImage accepts, for error messages.
const imageFormats = "PNG, JPEG, GIF, BMP or WebP"

// DecodeImage reads the image file at path: PNG, JPEG, GIF (its first
// frame), BMP or WebP, recognised by its content, not by its name. It is
// the one reader of image files of this package (NewImageFolder uses it),
// and the one a program should use to read an image given by its user.
//
// The file must be a regular file: a directory, a named pipe or a device
// is refused before it is opened. Its declared size is checked against
// MaxImagePixels before anything is decoded (for WebP, the size of the
// frame as well as of the canvas). A corrupt, truncated or oversized file
// gives an error naming the path, for example
//
//	x.png: not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF
//	x.png: png image of 60000×60000 pixels, more than the limit of 67108864 pixels (MaxImagePixels, 8192×8192)
func DecodeImage(path string) (image.Image, error) {
	f, _, err := openRegular(path, "an image file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	cfg, format, err := image.DecodeConfig(r)
	if err != nil {
		return nil, decodeErr(path, err)
	}
	if err := checkImageSize(path, format, cfg.Width, cfg.Height); err != nil {
		return nil, err
	}
	if format == "webp" {
		// The canvas of a VP8X chunk, which DecodeConfig reports, need not
		// be the size of the frame, which is what the decoder allocates.
		if err := rewind(f, r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		w, h, err := webpFrameSize(r)
		if err != nil {
			return nil, decodeErr(path, err)
		}
		if err := checkImageSize(path, format, w, h); err != nil {
			return nil, err
		}
	}
	if err := rewind(f, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	img, _, err := image.Decode(r)
	if err != nil {
		return nil, decodeErr(path, err)
	}
	return img, nil
}

// checkImageSize returns an error naming path if an image of w×h pixels is
// empty or larger than MaxImagePixels.
func checkImageSize(path, format string, w, h int) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%s: %s image of %d×%d pixels, expected at least 1×1", path, format, w, h)
	}
	if int64(w)*int64(h) > MaxImagePixels {
		return fmt.Errorf("%s: %s image of %d×%d pixels, more than the limit of %d pixels (MaxImagePixels, 8192×8192)",
			path, format, w, h, MaxImagePixels)
	}
	return nil
}

// rewind moves f back to its start and makes r read it from there.
func rewind(f *os.File, r *bufio.Reader) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r.Reset(f)
	return nil
}

// webpFrameSize returns the size of the first frame (VP8 or VP8L chunk) of
// a WebP stream, reading only the chunk headers and the frame header.
func webpFrameSize(r io.Reader) (w, h int, err error) {
	_, chunks, err := riff.NewReader(r)
	if err != nil {
		return 0, 0, err
	}
	for {
		id, n, data, err := chunks.Next()
		if err == io.EOF {
			return 0, 0, errors.New("webp: no VP8 or VP8L frame")
		}
		if err != nil {
			return 0, 0, err
		}
		switch id {
		case riff.FourCC{'V', 'P', '8', ' '}:
			d := vp8.NewDecoder()
			d.Init(data, int(n))
			fh, err := d.DecodeFrameHeader()
			return fh.Width, fh.Height, err
		case riff.FourCC{'V', 'P', '8', 'L'}:
			c, err := vp8l.DecodeConfig(data)
			return c.Width, c.Height, err
		}
	}
}

// BadImageError is the error of DecodeImage (and so of NewImageFolder)
// for a file that is not a valid image: corrupt, truncated or of no known
// format.
type BadImageError struct {
	// Path is the file.
	Path string
	// Err says what is wrong (io.ErrUnexpectedEOF for a truncated file).
	Err error
}

// Error returns "PATH: not a valid PNG, JPEG, GIF, BMP or WebP image: ERR".
func (e *BadImageError) Error() string {
	return fmt.Sprintf("%s: not a valid %s image: %v", e.Path, imageFormats, e.Err)
}

// Unwrap returns e.Err.
func (e *BadImageError) Unwrap() error { return e.Err }

// decodeErr is the error of a file that does not decode.
func decodeErr(path string, err error) error {
	if errors.Is(err, image.ErrFormat) {
		return &BadImageError{Path: path, Err: errors.New("unknown file signature (the first bytes match none of these formats)")}
	}
	if errors.Is(err, io.EOF) || strings.HasSuffix(err.Error(), io.ErrUnexpectedEOF.Error()) {
		err = io.ErrUnexpectedEOF // the file is cut short (png wraps it in a FormatError)
	}
	return &BadImageError{Path: path, Err: err}
}
