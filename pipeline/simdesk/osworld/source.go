package osworld

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

// httpSource reads judge state from a VM through the desktop server's file
// endpoints. Getters beyond files are not reachable over OSWorld's API.
type httpSource struct{ e *Env }

var _ judge.Source = (*httpSource)(nil)

// ReadFile implements judge.Source.
func (s *httpSource) ReadFile(p string) (string, error) {
	code, b, err := s.e.request(http.MethodPost, "/file", "application/x-www-form-urlencoded",
		strings.NewReader(url.Values{"file_path": {p}}.Encode()))
	if err != nil {
		return "", err
	}
	switch code {
	case http.StatusOK:
		return string(b), nil
	case http.StatusNotFound:
		return "", fmt.Errorf("%s: %w", p, judge.ErrNotFound)
	}
	return "", fmt.Errorf("osworld: POST /file %s: %s: %s", p, http.StatusText(code), clip(b))
}

type dirNode struct {
	Type     string     `json:"type"`
	Name     string     `json:"name"`
	Children []*dirNode `json:"children"`
}

// listDir returns a folder's tree, or nil when the path is not a folder.
func (s *httpSource) listDir(p string) (*dirNode, error) {
	b, _ := json.Marshal(map[string]string{"path": p})
	code, reply, err := s.e.request(http.MethodPost, "/list_directory", "application/json", strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	if code == http.StatusBadRequest {
		return nil, nil
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("osworld: POST /list_directory %s: %s: %s", p, http.StatusText(code), clip(reply))
	}
	var r struct {
		Tree *dirNode `json:"directory_tree"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		return nil, fmt.Errorf("osworld: POST /list_directory %s: decode: %w", p, err)
	}
	return r.Tree, nil
}

// Stat implements judge.Source.
func (s *httpSource) Stat(p string) (bool, bool, error) {
	tree, err := s.listDir(p)
	if err != nil {
		return false, false, err
	}
	if tree != nil {
		return true, true, nil
	}
	if _, err := s.ReadFile(p); err != nil {
		if errors.Is(err, judge.ErrNotFound) {
			return false, false, nil
		}
		return false, false, err
	}
	return true, false, nil
}

// ListDir implements judge.Source.
func (s *httpSource) ListDir(p string) ([]string, error) {
	tree, err := s.listDir(p)
	if err != nil {
		return nil, err
	}
	if tree == nil {
		return nil, fmt.Errorf("%s: %w", p, judge.ErrNotFound)
	}
	names := make([]string, 0, len(tree.Children))
	for _, c := range tree.Children {
		names = append(names, c.Name)
	}
	return names, nil
}

// Setting implements judge.Source.
func (s *httpSource) Setting(string) (any, error) { return nil, judge.ErrUnsupported }

// SentMail implements judge.Source.
func (s *httpSource) SentMail() ([]judge.Mail, error) { return nil, judge.ErrUnsupported }

// Windows implements judge.Source.
func (s *httpSource) Windows() (string, []string, error) { return "", nil, judge.ErrUnsupported }

// Editor implements judge.Source.
func (s *httpSource) Editor() (judge.EditorInfo, error) {
	return judge.EditorInfo{}, judge.ErrUnsupported
}

// Clipboard implements judge.Source.
func (s *httpSource) Clipboard() (string, error) { return "", judge.ErrUnsupported }

// Terminal implements judge.Source.
func (s *httpSource) Terminal() (string, error) { return s.e.term, nil }

// CommandOutput implements judge.CommandSource over /execute, as OSWorld's
// vm_command_line getter does.
func (s *httpSource) CommandOutput(command, shell json.RawMessage) (string, error) {
	body := map[string]json.RawMessage{"command": command}
	if len(shell) > 0 {
		body["shell"] = shell
	}
	var r execReply
	if err := s.e.postJSON("/execute", body, &r); err != nil {
		return "", err
	}
	return r.Output, nil
}

// vmGetters are the judge getters httpSource serves over OSWorld's API
// (files and folders); the others need a simulator.
var vmGetters = map[string]bool{"file_content": true, "vm_file": true, "file_exists": true, "folder_exists": true,
	"dir_listing": true, "sheet_cell": true, "sheet_cell_raw": true, "sheet_table": true, "rule": true, "vm_command_line": true}

// VMGetter reports whether a judge getter can be evaluated against an
// OSWorld VM.
func VMGetter(name string) bool { return vmGetters[name] }
