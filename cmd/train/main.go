package main

import (
	"context"
	"os"

	"github.com/hora-dl/hora/train"
)

func main() {
	os.Exit(train.Main(context.Background(), os.Args[1:]))
}
