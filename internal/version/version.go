// Package version is bucketgate's version, the one that the CLI prints and that both
// Lambda functions log at init.
//
// It comes from one place: the build stamps it with
//
//	-ldflags '-X github.com/bucketgate/bucketgate/internal/version.stamp=v0.3.0'
//
// as the Makefile does (from git describe, in `make build` and in `sam build`). A
// build without the stamp reports the main module's version from its build info: the
// tag that `go install github.com/bucketgate/bucketgate/cmd/bucketgate@v0.3.0` fetched,
// or the pseudo-version the go command derives from the checkout it built.
package version

import (
	"runtime/debug"
	"sync"
)

// stamp is the version set by the linker (-X); empty when the build set none.
var stamp string

// Devel is the version of a build that carries none: neither a stamp nor a module
// version in its build info (a test binary, a build outside version control).
const Devel = "(devel)"

// String returns the version: the linker's stamp, else the main module's version
// from the build info, else Devel.
func String() string { return current() }

var current = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return of(stamp, "")
	}
	return of(stamp, info.Main.Version)
})

// of returns the version of a build stamped with stamp whose main module has the
// version module in its build info.
func of(stamp, module string) string {
	switch {
	case stamp != "":
		return stamp
	case module != "" && module != Devel:
		return module
	}
	return Devel
}
