package data

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ImageExtensions are the file extensions ScanImageFolder takes for images,
// compared case-insensitively; other files are ignored.
var ImageExtensions = []string{".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp"}

// ImageList is the list of the images of a folder of class sub-folders, as
// found by ScanImageFolder: image Files[i] has label Labels[i], the index of
// its class in Classes.
type ImageList struct {
	// Root is the folder that was scanned.
	Root string
	// Classes are the class names, sorted; label k is Classes[k].
	Classes []string
	// Files are the paths of the images (Root joined with the path inside
	// it), class by class, in lexical order within a class.
	Files []string
	// Labels are the labels of Files, one per file.
	Labels []int64
}

// Len returns the number of images, len(l.Files).
func (l *ImageList) Len() int { return len(l.Files) }

// isImageFile reports whether name has one of the ImageExtensions.
func isImageFile(name string) bool {
	return slices.Contains(ImageExtensions, strings.ToLower(filepath.Ext(name)))
}

// extensionList is "(expected .png, .jpg, ...)" for error messages.
func extensionList() string {
	return "(expected " + strings.Join(ImageExtensions, ", ") + " files)"
}

// ScanImageFolder lists the images of dir, laid out as torchvision's
// ImageFolder expects: one sub-folder per class, named after the class,
// holding that class's images, found recursively. The classes are the
// sorted names of the sub-folders; entries whose names start with "." are
// skipped, and so are files without an image extension (ImageExtensions).
// Symbolic links are followed, but one whose target lies outside dir is an
// error: ScanImageFolder never lists a file outside dir.
//
// When classes is not nil (typically the Classes of the training split,
// when scanning the validation folder), the sub-folders must be exactly
// those classes, and labels are indices into classes.
//
// Errors name the folder or file at fault: dir missing or not a folder, dir
// without class sub-folders, a class folder without images, a class set that
// differs from classes (saying which classes are missing and which are
// extra).
func ScanImageFolder(dir string, classes []string) (*ImageList, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("image folder %s is not a folder, expected a folder of class sub-folders", dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	var found []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := inside(root, path)
			if err != nil {
				return nil, err
			}
			st, err := os.Stat(target)
			if err != nil {
				return nil, fmt.Errorf("image folder: %w", err)
			}
			isDir = st.IsDir()
		}
		if isDir {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("image folder %s has no class sub-folders, expected one sub-folder of images per class (e.g. %s)",
			dir, filepath.Join(dir, "cat", "001.png"))
	}
	if classes == nil {
		classes = found // sorted: os.ReadDir sorts by name
	} else if missing, extra := setDiff(classes, found), setDiff(found, classes); len(missing) > 0 || len(extra) > 0 {
		msg := fmt.Sprintf("image folder %s: class sub-folders differ from the %d expected classes:", dir, len(classes))
		if len(missing) > 0 {
			msg += fmt.Sprintf(" missing %q", missing)
		}
		if len(extra) > 0 {
			if len(missing) > 0 {
				msg += ";"
			}
			msg += fmt.Sprintf(" extra %q", extra)
		}
		return nil, fmt.Errorf("%s", msg)
	}
	list := &ImageList{Root: dir, Classes: slices.Clone(classes)}
	var empty []string
	for label, class := range list.Classes {
		n := len(list.Files)
		if err := scanClass(root, filepath.Join(dir, class), map[string]bool{}, func(path string) {
			list.Files = append(list.Files, path)
			list.Labels = append(list.Labels, int64(label))
		}); err != nil {
			return nil, err
		}
		if len(list.Files) == n {
			empty = append(empty, class)
		}
	}
	switch {
	case len(list.Files) == 0:
		return nil, fmt.Errorf("image folder %s has no images in its %d class folders %s", dir, len(list.Classes), extensionList())
	case len(empty) > 0:
		return nil, fmt.Errorf("class folder %s has no images %s", filepath.Join(dir, empty[0]), extensionList())
	}
	return list, nil
}

// scanClass calls add for every image file under the class folder dir, in
// lexical order, checking that symbolic links stay inside root. Linked
// folders are walked once each (seen holds their targets), so links cannot
// make the walk loop.
func scanClass(root, dir string, seen map[string]bool, add func(path string)) error {
	// WalkDir does not descend into a root that is a link: walk its target,
	// naming the files by their path through the link.
	walkRoot := dir
	if st, err := os.Lstat(dir); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, err := inside(root, dir)
		if err != nil {
			return err
		}
		walkRoot = target
	}
	return filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("image folder: %w", err)
		}
		if rel, err := filepath.Rel(walkRoot, path); err == nil {
			path = filepath.Join(dir, rel)
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if path == dir {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := inside(root, path)
			if err != nil {
				return err
			}
			st, err := os.Stat(target)
			if err != nil {
				return fmt.Errorf("image folder: %w", err)
			}
			if st.IsDir() {
				// Walk the linked folder (inside root) as if it were here.
				if seen[target] {
					return nil
				}
				seen[target] = true
				return scanClass(root, path, seen, add)
			}
		} else if d.IsDir() {
			return nil
		}
		if isImageFile(path) {
			add(path)
		}
		return nil
	})
}

// inside resolves the symbolic link path and returns its target, or an
// error when the target is outside root (an absolute path without links).
func inside(root, path string) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("image folder: symbolic link %s: %w", path, err)
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return "", fmt.Errorf("image folder: symbolic link %s: %w", path, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("image folder: %s is a symbolic link to %s, outside the folder %s; expected every image inside it", path, abs, root)
	}
	return abs, nil
}

// setDiff returns the elements of a that are not in b, sorted.
func setDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Split divides l into a training and a validation list, stratified by
// class: of the n images of each class, round(fraction×n) go to val (at
// least 1 when fraction > 0 and n >= 2, and at most n-1 when fraction < 1),
// chosen at random by a generator seeded with (seed, class), the rest to
// train. Both lists keep l's order and Classes. The same seed gives the
// same split. Split panics if fraction is not in [0, 1].
func (l *ImageList) Split(fraction float64, seed uint64) (train, val *ImageList) {
	if !(fraction >= 0 && fraction <= 1) {
		panic(fmt.Sprintf("data: ImageList.Split: fraction = %v, expected a value in [0, 1]", fraction))
	}
	byClass := make([][]int, len(l.Classes))
	for i, y := range l.Labels {
		byClass[y] = append(byClass[y], i)
	}
	toVal := make([]bool, len(l.Files))
	for c, idx := range byClass {
		n := len(idx)
		k := int(math.Round(fraction * float64(n)))
		if fraction > 0 && n >= 2 {
			k = max(k, 1)
		}
		if fraction < 1 && n >= 2 {
			k = min(k, n-1)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		for _, j := range rng.Perm(n)[:k] {
			toVal[idx[j]] = true
		}
	}
	train = &ImageList{Root: l.Root, Classes: slices.Clone(l.Classes)}
	val = &ImageList{Root: l.Root, Classes: slices.Clone(l.Classes)}
	for i, f := range l.Files {
		dst := train
		if toVal[i] {
			dst = val
		}
		dst.Files = append(dst.Files, f)
		dst.Labels = append(dst.Labels, l.Labels[i])
	}
	return train, val
}
