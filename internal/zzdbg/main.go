package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"spate/job"
)

type res struct {
	Op     string `json:"op"`
	Key    string `json:"key"`
	Window int64  `json:"window"`
	Count  int64  `json:"count"`
	Sum    int64  `json:"sum"`
}

var ngroups = 64

func main() {
	dir, win := os.Args[1], int64(4000)
	files, _ := filepath.Glob(filepath.Join(dir, "output", "sink-*.jsonl"))
	count := map[string]res{}
	roll := map[string]res{}
	for _, f := range files {
		fh, _ := os.Open(f)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r res
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Window != win {
				continue
			}
			if r.Op == "count" {
				count[r.Key] = r
			} else {
				roll[r.Key] = r
			}
		}
	}
	exp := map[string]int64{}
	byKG := map[string]map[job.KeyGroup]int64{}
	for k, r := range count {
		g := job.GroupName([]byte(k), ngroups)
		exp[g] += r.Count
		if byKG[g] == nil {
			byKG[g] = map[job.KeyGroup]int64{}
		}
		byKG[g][job.GroupOf([]byte(k), 128)] += r.Count
	}
	var gs []string
	for g := range exp {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	for _, g := range gs {
		fmt.Printf("%s expected %d got %d (diff %d)\n", g, exp[g], roll[g].Count, exp[g]-roll[g].Count)
	}
	// per key group, the counts in window
	kgs := map[job.KeyGroup]int64{}
	for k, r := range count {
		kgs[job.GroupOf([]byte(k), 128)] += r.Count
	}
	// per key group: is every key of it (in window) in a rollup group whose got >= its expected share? print per kg contributions
	ranges := [][2]int{{0, 64}, {64, 76}, {76, 85}, {85, 106}, {106, 128}}
	for _, g := range gs {
		fmt.Printf("%s got %d:", g, roll[g].Count)
		for _, r := range ranges {
			var n int64
			for kg, c := range byKG[g] {
				if int(kg) >= r[0] && int(kg) < r[1] {
					n += c
				}
			}
			fmt.Printf(" [%d,%d)=%d", r[0], r[1], n)
		}
		fmt.Println()
	}
}
