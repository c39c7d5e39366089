package train_test

import (
	"fmt"
	"strings"

	"github.com/hora-dl/hora/train"
)

// ExampleConfigReference prints the start of the configuration reference
// (what `train help config` prints in full).
func ExampleConfigReference() {
	ref := train.ConfigReference()
	lines := strings.Split(ref, "\n")
	fmt.Println(lines[0])
	for _, line := range lines {
		if strings.HasPrefix(line, "| `optimizer.lr` |") {
			fmt.Println(line)
		}
	}
	// Output:
	// # Configuration reference
	// | `optimizer.lr` | number | required | LR is the (initial) learning rate. Required, > 0. |
}
