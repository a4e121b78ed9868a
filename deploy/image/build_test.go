package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// image is an archive read the way a loader reads it: index.json -> manifest
// -> config and layer, every blob checked against its digest and size.
type image struct {
	index    index
	manifest manifest
	config   imageConfig
	entries  []entry // the layer, in order
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func readArchive(t *testing.T, archive []byte) image {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("archive: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("archive %s: %v", h.Name, err)
			}
			files[h.Name] = b
		}
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("oci-layout = %q", got)
	}
	blob := func(d descriptor, mediaType string) []byte {
		t.Helper()
		if d.MediaType != mediaType {
			t.Fatalf("descriptor media type %q, want %q", d.MediaType, mediaType)
		}
		b, ok := files[blobPath(d)]
		if !ok {
			t.Fatalf("blob %s missing (archive has %v)", d.Digest, slices.Sorted(maps.Keys(files)))
		}
		if digest(b) != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s: digest %s size %d, descriptor says size %d", blobPath(d), digest(b), len(b), d.Size)
		}
		return b
	}
	var img image
	if err := json.Unmarshal(files["index.json"], &img.index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if img.index.SchemaVersion != 2 || img.index.MediaType != mediaIndex || len(img.index.Manifests) != 1 {
		t.Fatalf("index.json: %s", files["index.json"])
	}
	if err := json.Unmarshal(blob(img.index.Manifests[0], mediaManifest), &img.manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if img.manifest.SchemaVersion != 2 || len(img.manifest.Layers) != 1 {
		t.Fatalf("manifest: %+v", img.manifest)
	}
	if err := json.Unmarshal(blob(img.manifest.Config, mediaConfig), &img.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(img.manifest.Layers[0], mediaLayer)))
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	if ids := img.config.RootFS.DiffIDs; len(ids) != 1 || ids[0] != digest(raw) {
		t.Fatalf("config diff_ids %v, uncompressed layer is %s", ids, digest(raw))
	}
	lr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		b, err := io.ReadAll(lr)
		if err != nil {
			t.Fatalf("layer %s: %v", h.Name, err)
		}
		img.entries = append(img.entries, entry{h, b})
	}
	return img
}

func TestBuildLayout(t *testing.T) {
	created := time.Unix(1700000000, 0)
	spec := Spec{Binary: []byte("\x7fELF not really"), Arch: "arm64", Name: "kaas:dev", Version: "v1.2.3", Revision: "abc123", Created: created}
	var buf bytes.Buffer
	if err := Build(&buf, spec); err != nil {
		t.Fatal(err)
	}
	img := readArchive(t, buf.Bytes())

	if a := img.index.Manifests[0].Annotations; a["io.containerd.image.name"] != "docker.io/library/kaas:dev" || a["org.opencontainers.image.ref.name"] != "dev" {
		t.Errorf("index annotations %v", a)
	}
	if p := img.index.Manifests[0].Platform; p == nil || *p != (platform{"arm64", "linux"}) {
		t.Errorf("index platform %+v", p)
	}
	c := img.config
	if c.Architecture != "arm64" || c.OS != "linux" || c.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("config arch %s os %s created %s", c.Architecture, c.OS, c.Created)
	}
	if c.Config.User != "65532:65532" {
		t.Errorf("user %q, want the numeric non-root 65532:65532", c.Config.User)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/kaas"}) {
		t.Errorf("entrypoint %v", c.Config.Entrypoint)
	}
	if got := slices.Sorted(maps.Keys(c.Config.ExposedPorts)); !slices.Equal(got, []string{"8080/tcp", "9092/tcp", "9094/tcp"}) {
		t.Errorf("exposed ports %v", got)
	}
	if got := slices.Sorted(maps.Keys(c.Config.Volumes)); !slices.Equal(got, []string{"/data"}) {
		t.Errorf("volumes %v", got)
	}
	if !slices.Contains(c.Config.Env, "KAAS_DATA_DIR=/data") {
		t.Errorf("env %v", c.Config.Env)
	}
	l := c.Config.Labels
	if l["org.opencontainers.image.version"] != "v1.2.3" || l["org.opencontainers.image.revision"] != "abc123" ||
		l["org.opencontainers.image.title"] != "kaas" || l["org.opencontainers.image.source"] != "https://github.com/kaas-project/kaas" {
		t.Errorf("labels %v", l)
	}

	// The layer: exactly these entries, with these owners and modes.
	type want struct {
		typ      byte
		mode     int64
		uid, gid int
		data     []byte
	}
	wants := map[string]want{
		"data/":      {tar.TypeDir, 0o755, uid, gid, nil},
		"etc/":       {tar.TypeDir, 0o755, 0, 0, nil},
		"etc/group":  {tar.TypeReg, 0o644, 0, 0, group},
		"etc/passwd": {tar.TypeReg, 0o644, 0, 0, passwd},
		"kaas":       {tar.TypeReg, 0o755, 0, 0, spec.Binary},
	}
	var names []string
	for _, e := range img.entries {
		names = append(names, e.hdr.Name)
		w, ok := wants[e.hdr.Name]
		if !ok {
			continue
		}
		if e.hdr.Typeflag != w.typ || e.hdr.Mode != w.mode || e.hdr.Uid != w.uid || e.hdr.Gid != w.gid ||
			!bytes.Equal(e.data, w.data) || !e.hdr.ModTime.Equal(created) {
			t.Errorf("layer %s: type %c mode %o owner %d:%d mtime %s, %d bytes; want type %c mode %o owner %d:%d, %d bytes",
				e.hdr.Name, e.hdr.Typeflag, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, e.hdr.ModTime, len(e.data), w.typ, w.mode, w.uid, w.gid, len(w.data))
		}
	}
	if !slices.Equal(names, slices.Sorted(maps.Keys(wants))) {
		t.Errorf("layer entries %v, want %v", names, slices.Sorted(maps.Keys(wants)))
	}
	// The user resolves by name too, and is not root.
	if !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") || !strings.Contains(string(group), "\nnonroot:x:65532:") {
		t.Errorf("passwd/group lack nonroot 65532:\n%s\n%s", passwd, group)
	}

	// Reproducible: the same spec gives the same bytes.
	var again bytes.Buffer
	if err := Build(&again, spec); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two builds of the same spec differ")
	}
}

func TestNormalize(t *testing.T) {
	for ref, want := range map[string]string{
		"kaas:dev":                         "docker.io/library/kaas:dev",
		"kaas":                             "docker.io/library/kaas:latest",
		"me/kaas:1.0":                      "docker.io/me/kaas:1.0",
		"ghcr.io/kaas-project/kaas:v1":     "ghcr.io/kaas-project/kaas:v1",
		"localhost:5000/kaas":              "localhost:5000/kaas:latest",
		"localhost/kaas:Dev_1":             "localhost/kaas:Dev_1",
		"registry.example:5000/a/b/kaas:x": "registry.example:5000/a/b/kaas:x",
	} {
		if got, _, err := normalize(ref); err != nil || got != want {
			t.Errorf("normalize(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, bad := range []string{"", "Kaas:dev", "kaas:", "kaas@sha256:00", "ka as"} {
		if got, _, err := normalize(bad); err == nil {
			t.Errorf("normalize(%q) = %q, want an error", bad, got)
		}
	}
}

// A FROM-scratch image has no loader: dynamically linked binaries are refused.
func TestBinaryArch(t *testing.T) {
	f, err := os.Open("/bin/true") // Debian's: dynamically linked against libc
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := binaryArch(f); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("/bin/true: %v, want a dynamically-linked error", err)
	}
	if _, err := binaryArch(strings.NewReader("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("script: %v", err)
	}
}

// The Dockerfile describes the same image as Build: user, entrypoint, volume, ports,
// environment and labels. (Built with buildah, its final stage gave the same config
// and the same layer entries, owners and modes; CI has no registry for its builder.)
func TestDockerfileDescribesTheSameImage(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var buf bytes.Buffer
	if err := Build(&buf, Spec{Binary: []byte("x"), Arch: "amd64", Name: "kaas:dev", Version: "v", Revision: "r"}); err != nil {
		t.Fatal(err)
	}
	c := readArchive(t, buf.Bytes()).config.Config
	var ports []string
	for _, p := range slices.Sorted(maps.Keys(c.ExposedPorts)) {
		ports = append(ports, strings.TrimSuffix(p, "/tcp"))
	}
	want := []string{
		"\nUSER " + c.User + "\n",
		`ENTRYPOINT ["` + strings.Join(c.Entrypoint, `", "`) + `"]`,
		`VOLUME ["` + strings.Join(slices.Sorted(maps.Keys(c.Volumes)), `", "`) + `"]`,
		"\nWORKDIR " + c.WorkingDir + "\n",
		"\nSTOPSIGNAL " + c.StopSignal + "\n",
		"--chown=" + c.User + " /out/data /data",
		"COPY deploy/image/rootfs/etc/passwd deploy/image/rootfs/etc/group /etc/",
	}
	want = append(want, c.Env...)
	for k, v := range c.Labels {
		if k == "org.opencontainers.image.version" || k == "org.opencontainers.image.revision" {
			v = map[string]string{"v": "${VERSION}", "r": "${REVISION}"}[v]
		}
		want = append(want, k+`="`+v+`"`)
	}
	for _, w := range want {
		if !strings.Contains(df, w) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	// EXPOSE lists the same ports (in any order).
	i := strings.Index(df, "\nEXPOSE ")
	if i < 0 {
		t.Fatal("Dockerfile has no EXPOSE")
	}
	got := strings.Fields(strings.SplitN(df[i+len("\nEXPOSE "):], "\n", 2)[0])
	slices.Sort(got)
	if !slices.Equal(got, ports) {
		t.Errorf("Dockerfile EXPOSE %v, image %v", got, ports)
	}
}
