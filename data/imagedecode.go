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

	_ "golang.org/x/image/bmp"  // register BMP
	_ "golang.org/x/image/webp" // register WebP
)

// MaxImagePixels is the largest image, in pixels (width × height), that
// DecodeImage accepts. A header that claims more is rejected before the
// pixels are decoded, so a malicious file cannot exhaust memory.
const MaxImagePixels = 1 << 27

// imageFormats names the formats DecodeImage accepts, for error messages.
const imageFormats = "PNG, JPEG, GIF, BMP or WebP"

// DecodeImage reads the image file at path: PNG, JPEG, GIF (its first
// frame), BMP or WebP, recognised by its content, not by its name. A
// corrupt, truncated or oversized file gives an error naming the path, for
// example
//
//	x.png: not a valid PNG, JPEG, GIF, BMP or WebP image: unexpected EOF
func DecodeImage(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the path
	}
	defer f.Close()
	r := bufio.NewReader(f)
	cfg, format, err := image.DecodeConfig(r)
	if err != nil {
		return nil, decodeErr(path, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return nil, fmt.Errorf("%s: %s image of %d×%d pixels, expected 1 to %d pixels", path, format, cfg.Width, cfg.Height, MaxImagePixels)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Reset(f)
	img, _, err := image.Decode(r)
	if err != nil {
		return nil, decodeErr(path, err)
	}
	return img, nil
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
