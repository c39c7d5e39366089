package diskcache

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the folder for the cache named sub: $HORA_CACHE_DIR/sub when
// HORA_CACHE_DIR is set, else hora/sub in the user's cache folder
// (~/.cache/hora/sub on Linux), else hora-cache-UID/sub in the system's
// temporary folder. The folder is not created.
func Dir(sub string) string {
	if d := os.Getenv("HORA_CACHE_DIR"); d != "" {
		return filepath.Join(d, sub)
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "hora", sub)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("hora-cache-%d", os.Getuid()), sub)
}
