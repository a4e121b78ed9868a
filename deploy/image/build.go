package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The image's user: non-root, numeric (Kubernetes' runAsNonRoot can only
// verify a numeric user), the same ids as the Dockerfile and distroless.
const (
	uid = 65532
	gid = 65532
)

// The same files the Dockerfile copies, so both routes give one image.
var (
	//go:embed rootfs/etc/passwd
	passwd []byte
	//go:embed rootfs/etc/group
	group []byte
)

// OCI media types (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Spec is what goes into the image.
type Spec struct {
	Binary   []byte    // static linux executable, installed as /kaas
	Arch     string    // GOARCH of Binary (binaryArch derives it)
	Name     string    // image reference, e.g. "kaas:dev"; normalized to docker.io/library/kaas:dev
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision
	Created  time.Time // every timestamp in the image: the commit time makes the build reproducible
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type imageConfig struct {
	Created      string     `json:"created"`
	Architecture string     `json:"architecture"`
	OS           string     `json:"os"`
	Config       execConfig `json:"config"`
	RootFS       rootFS     `json:"rootfs"`
	History      []record   `json:"history"`
}

type execConfig struct {
	User         string              `json:"User"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Env          []string            `json:"Env"`
	Entrypoint   []string            `json:"Entrypoint"`
	WorkingDir   string              `json:"WorkingDir"`
	Volumes      map[string]struct{} `json:"Volumes"`
	Labels       map[string]string   `json:"Labels"`
	StopSignal   string              `json:"StopSignal"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type record struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// Build writes s as an OCI image layout in a tar (an "oci-archive": podman
// load, skopeo, ctr image import, kind load image-archive) to w. The output
// depends only on s.
func Build(w io.Writer, s Spec) error {
	if len(s.Binary) == 0 || s.Arch == "" || s.Version == "" {
		return errors.New("image spec: binary, arch and version are required")
	}
	name, tag, err := normalize(s.Name)
	if err != nil {
		return err
	}
	created := s.Created.UTC().Truncate(time.Second)
	layer, diffID, err := buildLayer(s.Binary, created)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	cfg := imageConfig{
		Created:      created.Format(time.RFC3339),
		Architecture: s.Arch,
		OS:           "linux",
		Config: execConfig{
			User:         fmt.Sprintf("%d:%d", uid, gid),
			ExposedPorts: map[string]struct{}{"9092/tcp": {}, "9094/tcp": {}, "8080/tcp": {}},
			// The data directory defaults to the volume: a plain `podman run`
			// keeps its topics (the StatefulSet sets it too).
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "KAAS_DATA_DIR=/data"},
			Entrypoint: []string{"/kaas"},
			WorkingDir: "/",
			Volumes:    map[string]struct{}{"/data": {}},
			Labels:     Labels(s.Version, s.Revision),
			// kaas drains on SIGTERM (also the runtimes' default; stated for clarity).
			StopSignal: "SIGTERM",
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []record{{Created: created.Format(time.RFC3339), CreatedBy: "kaas deploy/image: /kaas, /etc/passwd, /etc/group, /data"}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cfgDesc := describe(mediaConfig, cfgJSON)
	layerDesc := describe(mediaLayer, layer)
	man, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: cfgDesc, Layers: []descriptor{layerDesc}})
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	manDesc := describe(mediaManifest, man)
	manDesc.Platform = &platform{Architecture: s.Arch, OS: "linux"}
	// containerd (ctr, kind) and podman name the loaded image after
	// io.containerd.image.name; ref.name holds the tag as the OCI layout
	// spec intends (BuildKit's oci exporter writes the same pair).
	manDesc.Annotations = map[string]string{
		"io.containerd.image.name":          name,
		"org.opencontainers.image.ref.name": tag,
	}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{manDesc}})
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}

	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: created, Format: tar.FormatUSTAR}); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{blobPath(cfgDesc), cfgJSON},
		{blobPath(layerDesc), layer},
		{blobPath(manDesc), man},
		{"index.json", idx},
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, f.data, 0o644, 0, 0, created); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// Labels are the image's OCI labels, as in the Dockerfile (the creation time
// is the config's own "created" field). No licenses label: the repository has
// no license file yet.
func Labels(version, revision string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "kaas",
		"org.opencontainers.image.description": "Kafka-compatible broker for Kubernetes (StatefulSet on a shared ReadWriteMany volume)",
		"org.opencontainers.image.source":      "https://github.com/kaas-project/kaas",
		"org.opencontainers.image.version":     version,
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

// buildLayer returns the gzip'd layer and its diff ID (digest of the
// uncompressed tar). Entries are in a fixed order with fixed times.
func buildLayer(binary []byte, created time.Time) (gz []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dir := func(name string, mode int64, u, g int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: u, Gid: g, ModTime: created, Format: tar.FormatUSTAR})
	}
	steps := []func() error{
		// The mount point for the shared volume, writable by the user when
		// nothing is mounted (podman run without -v; runc in the tests).
		func() error { return dir("data/", 0o755, uid, gid) },
		func() error { return dir("etc/", 0o755, 0, 0) },
		func() error { return writeFile(tw, "etc/group", group, 0o644, 0, 0, created) },
		func() error { return writeFile(tw, "etc/passwd", passwd, 0o644, 0, 0, created) },
		// Owned by root: the broker cannot replace its own binary.
		func() error { return writeFile(tw, "kaas", binary, 0o755, 0, 0, created) },
		tw.Close,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, "", err
		}
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out) // no name, no mtime in the header: deterministic
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), digest(raw.Bytes()), nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64, u, g int, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: u, Gid: g,
		Size: int64(len(data)), ModTime: mtime, Format: tar.FormatUSTAR}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func describe(mediaType string, b []byte) descriptor {
	return descriptor{MediaType: mediaType, Digest: digest(b), Size: int64(len(b))}
}

func blobPath(d descriptor) string {
	return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
}

// normalize turns "kaas:dev" into ("docker.io/library/kaas:dev", "dev"), the
// name a kubelet looks up for `image: kaas:dev`. Digest references are not
// accepted: the digest is the output, not an input.
func normalize(ref string) (name, tag string, err error) {
	repo, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if repo == "" || tag == "" || repo != strings.ToLower(repo) || strings.ContainsAny(ref, "@ \t\n") {
		return "", "", fmt.Errorf("image name %q: want [registry/]repository[:tag], the repository in lower case", ref)
	}
	first, _, hasSlash := strings.Cut(repo, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		repo = "docker.io/" + repo
	}
	if rest, ok := strings.CutPrefix(repo, "docker.io/"); ok && !strings.Contains(rest, "/") {
		repo = "docker.io/library/" + rest
	}
	return repo + ":" + tag, tag, nil
}

// binaryArch checks that the file is a static linux ELF executable (the
// image has no libc and no loader) and returns its GOARCH.
func binaryArch(r io.ReaderAt) (string, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return "", fmt.Errorf("ELF OS ABI %v is not linux", f.OSABI)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", errors.New("dynamically linked (has an ELF interpreter): build with CGO_ENABLED=0")
		}
	}
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	if arch == "" {
		return "", fmt.Errorf("ELF machine %v not supported (amd64, arm64)", f.Machine)
	}
	return arch, nil
}
