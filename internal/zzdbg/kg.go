package main

import (
	"fmt"
	"os"

	"spate/job"
)

func init() {
	if len(os.Args) > 2 && os.Args[1] == "kg" {
		for _, k := range os.Args[2:] {
			fmt.Println(k, job.GroupOf([]byte(k), 128), job.GroupName([]byte(k), 11))
		}
		os.Exit(0)
	}
}
