// Command image writes the kaas container image as an OCI archive from a
// prebuilt static binary, using only the standard library: nothing is pulled,
// no container engine is needed, and the same inputs give the same bytes.
// `go tool task image` runs it; deploy/Dockerfile describes the same
// image for builds with a registry.
//
//	go run ./deploy/image -binary bin/image/kaas -o bin/kaas-image.tar -name kaas:dev -version v1.2.3
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "", "static linux kaas executable (CGO_ENABLED=0)")
	out := fs.String("o", "bin/kaas-image.tar", "output OCI archive")
	name := fs.String("name", "kaas:dev", "image name recorded in the archive (what podman load / ctr import call it)")
	version := fs.String("version", "dev", "org.opencontainers.image.version")
	revision := fs.String("revision", "", "org.opencontainers.image.revision (git commit)")
	created := fs.String("created", "0", "image timestamps, Unix seconds (the commit time keeps builds reproducible)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" {
		return fmt.Errorf("-binary is required")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: %w", *created, err)
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("read binary: %w", err)
	}
	arch, err := binaryArch(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("%s: %w", *binary, err)
	}
	spec := Spec{Binary: bin, Arch: arch, Name: *name, Version: *version, Revision: *revision, Created: time.Unix(secs, 0)}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	// Written aside and renamed: a failed build never leaves a truncated archive.
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	if err := Build(f, spec); err != nil {
		f.Close()
		return fmt.Errorf("build %s: %w", *out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		return fmt.Errorf("rename to %s: %w", *out, err)
	}
	fmt.Printf("%s: %s (linux/%s, version %s)\n", *out, spec.Name, arch, spec.Version)
	return nil
}
