package coord

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheCoreDoesNoIO reads the coordinator's source: no method of the
// core (receiver *core) starts a goroutine, sends or receives on a
// channel, selects, reads the clock or sleeps, or calls into os, net,
// os/exec or yamux. What it decides goes out as work (core.go); the
// driver alone does I/O. The type keeps it from the driver's fields; this
// keeps it from the rest.
func TestTheCoreDoesNoIO(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{"os": true, "net": true, "exec": true, "yamux": true, "http": true, "syscall.Kill": true}
	bannedTime := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	fset := token.NewFileSet()
	methods := 0
	var found []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil || !isCoreRecv(fn.Recv) {
				continue
			}
			methods++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				what := ""
				switch n := n.(type) {
				case *ast.GoStmt:
					what = "starts a goroutine"
				case *ast.SelectStmt:
					what = "selects"
				case *ast.SendStmt:
					what = "sends on a channel"
				case *ast.UnaryExpr:
					if n.Op == token.ARROW {
						what = "receives from a channel"
					}
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok {
						switch {
						case banned[id.Name]:
							what = "calls " + id.Name + "." + n.Sel.Name
						case id.Name == "time" && bannedTime[n.Sel.Name]:
							what = "uses time." + n.Sel.Name
						}
					}
				}
				if what != "" {
					found = append(found, fmt.Sprintf("%s: (*core).%s %s", fset.Position(n.Pos()), fn.Name.Name, what))
				}
				return true
			})
		}
	}
	if methods < 100 {
		t.Fatalf("only %d methods of the core found: is the receiver still *core?", methods)
	}
	if len(found) > 0 {
		t.Errorf("the core does I/O:\n%s", strings.Join(found, "\n"))
	}
}

func isCoreRecv(fl *ast.FieldList) bool {
	if len(fl.List) != 1 {
		return false
	}
	star, ok := fl.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "core"
}
