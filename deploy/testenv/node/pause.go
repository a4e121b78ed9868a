package node

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
)

// writePauseImage writes SandboxImage as an OCI archive (the layout `ctr images import`
// reads) holding the static binary at /pause as its entrypoint.
func writePauseImage(path, binary string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diffID := sha(layerTar.Bytes())
	var layer bytes.Buffer
	gz := gzip.NewWriter(&layer)
	gz.Write(layerTar.Bytes()) //nolint:errcheck // bytes.Buffer
	if err := gz.Close(); err != nil {
		return err
	}
	type desc struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}, "User": "65535:65535"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	cfgD := desc{"application/vnd.oci.image.config.v1+json", sha(cfg), len(cfg), nil}
	layerD := desc{"application/vnd.oci.image.layer.v1.tar+gzip", sha(layer.Bytes()), layer.Len(), nil}
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cfgD, "layers": []desc{layerD}})
	manD := desc{"application/vnd.oci.image.manifest.v1+json", sha(man), len(man), map[string]string{
		"io.containerd.image.name":          SandboxImage,
		"org.opencontainers.image.ref.name": SandboxImage[strings.LastIndex(SandboxImage, ":")+1:],
	}}
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []desc{manD}})

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	out := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{blob(cfgD.Digest), cfg}, {blob(layerD.Digest), layer.Bytes()}, {blob(manD.Digest), man},
		{"index.json", idx},
	} {
		if err := out.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := out.Write(e.data); err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	return f.Close()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func blob(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }
