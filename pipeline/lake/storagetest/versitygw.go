package storagetest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// S3Server is a loopback S3 server started for a test.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string
	Dir       string // the posix backend's folder
}

// Env returns the AWS environment variables that point a client at s.
func (s *S3Server) Env() []string {
	return []string{"AWS_ENDPOINT_URL=" + s.Endpoint, "AWS_REGION=" + s.Region,
		"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}
}

// SetEnv sets Env for the rest of the test.
func (s *S3Server) SetEnv(t *testing.T) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
}

// VersityGWBinary finds the versitygw binary: $CUALAKE_VERSITYGW, then
// .cache/bin/versitygw at the module root (scripts/setup-versitygw.sh puts
// it there), then $PATH. "" if there is none.
func VersityGWBinary() string {
	if p := os.Getenv("CUALAKE_VERSITYGW"); p != "" {
		return p
	}
	if root := ModuleRoot(); root != "" {
		p := filepath.Join(root, ".cache", "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

// ModuleRoot is the folder holding go.mod above the working directory.
func ModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// StartVersityGW starts versitygw with its posix backend on a free loopback
// port, for the duration of the test; it skips the test when the binary is
// not built. It never listens on anything but 127.0.0.1.
func StartVersityGW(t *testing.T) *S3Server {
	t.Helper()
	bin := VersityGWBinary()
	if bin == "" {
		t.Skip("versitygw is not built: run scripts/setup-versitygw.sh (or set CUALAKE_VERSITYGW) to test the S3 backend")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "posix")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 12)
	rand.Read(key) //nolint:errcheck // crypto/rand does not fail
	s := &S3Server{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: "cualake" + hex.EncodeToString(key[:4]),
		SecretKey: hex.EncodeToString(key), Dir: data}
	logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region, "--port", addr, "posix", data)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-done
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case err := <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("versitygw exited: %v\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s within 30s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NewBucketName returns a fresh bucket name for a test.
func NewBucketName(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	return fmt.Sprintf("%s-%s", prefix, hex.EncodeToString(b))
}
