// Package ui is cualake's local web UI over a lake, served by the binary
// itself (`cualake ui`): refs and the snapshot log with lineage, a table
// browser, a SQL box through the same confined engine as `cualake query`,
// the viewer pages rendered live, and the shipped notebooks.
//
// It only reads: every handler is a GET, SQL goes through query.Engine
// (read-only statements over the lake's own files), and nothing is written
// anywhere under the lake. A token, when set, must come with every request
// (an Authorization: Bearer header, an X-Cualake-Token header, or a token
// query parameter, which then sets a cookie so links keep working); it is
// compared in constant time. Without one, only requests addressed to a
// loopback host name are served, so a web page elsewhere cannot reach the
// server through DNS rebinding.
package ui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/view"
)

// Options configure a Server.
type Options struct {
	// Token, when not empty, is required on every request.
	Token string
	// Tokenizers decodes segments' tokens on trajectory pages for a
	// snapshot; nil shows ids undecoded.
	Tokenizers func(*lake.Manifest) view.Tokenizers
	// Notebooks lists notebooks by name and returns one's source; nil
	// hides the notebooks.
	Notebooks      func() []string
	NotebookSource func(name string) ([]byte, error)
}

// Server serves one lake. Engines are kept per snapshot (a few, least
// recently used closed first); each serves one request at a time.
type Server struct {
	lake *lake.Lake
	opt  Options

	mu      sync.Mutex
	engines []*engine // most recently used last
}

type engine struct {
	id string
	mu sync.Mutex // one query at a time per DuckDB session
	e  *query.Engine
}

// maxEngines bounds the open DuckDB sessions.
const maxEngines = 4

// New returns a server over l.
func New(l *lake.Lake, o Options) *Server { return &Server{lake: l, opt: o} }

// Close closes the open engines.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, en := range s.engines {
		en.mu.Lock()
		errs = append(errs, en.e.Close())
		en.mu.Unlock()
	}
	s.engines = nil
	return errors.Join(errs...)
}

// withEngine runs fn with the engine of snapshot m, holding it.
func (s *Server) withEngine(ctx context.Context, m *lake.Manifest, fn func(*query.Engine) error) error {
	s.mu.Lock()
	var en *engine
	for i, x := range s.engines {
		if x.id == m.ID {
			en = x
			s.engines = append(append(s.engines[:i:i], s.engines[i+1:]...), x)
			break
		}
	}
	if en == nil {
		e, err := query.Open(ctx, s.lake, m)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		en = &engine{id: m.ID, e: e}
		s.engines = append(s.engines, en)
		if len(s.engines) > maxEngines {
			old := s.engines[0]
			s.engines = s.engines[1:]
			go func() { // close once its current request is done
				old.mu.Lock()
				old.e.Close()
				old.mu.Unlock()
			}()
		}
	}
	en.mu.Lock()
	s.mu.Unlock()
	defer en.mu.Unlock()
	return fn(en.e)
}

// cookieName carries the token after a request brought it as a query
// parameter.
const cookieName = "cualake_ui_token"

// Handler returns the UI's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /log", s.log)
	mux.HandleFunc("GET /snapshot/{id}", s.snapshot)
	mux.HandleFunc("GET /tables", s.tables)
	mux.HandleFunc("GET /table/{name}", s.table)
	mux.HandleFunc("GET /sql", s.sql)
	mux.HandleFunc("GET /view/{kind}/{id}", s.viewPage)
	mux.HandleFunc("GET /blob/{hash}", s.blob)
	mux.HandleFunc("GET /notebooks", s.notebooks)
	mux.HandleFunc("GET /notebook/{name}", s.notebook)
	return s.guard(mux)
}

// guard checks the method, the token or the host, and sets the headers
// every response carries.
func (s *Server) guard(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(s.opt.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer") // the token may be in the URL
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "cualake ui is read-only: only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if s.opt.Token == "" {
			if !loopbackHost(r.Host) {
				http.Error(w, "cualake ui without --token answers only requests to 127.0.0.1, localhost or [::1]", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		got, fromQuery := requestToken(r)
		sum := sha256.Sum256([]byte(got))
		if got == "" || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			http.Error(w, "cualake ui: this server needs its token (Authorization: Bearer T, X-Cualake-Token, or ?token=T)", http.StatusUnauthorized)
			return
		}
		if fromQuery {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: got, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		next.ServeHTTP(w, r)
	})
}

// requestToken finds the token a request carries: a header, the query
// parameter (fromQuery), or the cookie a query parameter set.
func requestToken(r *http.Request) (tok string, fromQuery bool) {
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(a), false
	}
	if t := r.Header.Get("X-Cualake-Token"); t != "" {
		return t, false
	}
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return c.Value, false
	}
	return "", false
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback says whether a listen address (host:port) binds to loopback
// only; `cualake ui` requires a token for any other.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false // ":8765" listens on every interface
	}
	return loopbackHost(host)
}

// at resolves the request's ?at= (default main).
func (s *Server) at(r *http.Request) (*lake.Manifest, error) {
	return s.lake.At(r.Context(), r.URL.Query().Get("at"))
}

// links are the live pages' links, pinned to one snapshot.
type links struct{ at string }

func (l links) Page(kind, id string) string {
	return "/view/" + kind + "/" + url.PathEscape(id) + "?at=" + url.QueryEscape(l.at)
}

func (l links) Blob(hash, mime string) string {
	return "/blob/" + url.PathEscape(hash) + "?at=" + url.QueryEscape(l.at)
}

// fail writes an error page: 404 for what the lake does not hold, 400 for
// a bad request, 500 otherwise.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, lake.ErrNotExist), errors.Is(err, view.ErrNotFound), errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	}
	var b bytes.Buffer
	pageTmpl.ExecuteTemplate(&b, "error", map[string]any{"Code": code, "Err": err.Error()})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
)

// page renders one of the UI's own pages into the shared layout.
func page(w http.ResponseWriter, name string, data map[string]any) {
	var b bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&b, name, data); err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// withNav writes a full HTML page made elsewhere (viewer, notebook) with
// the UI's navigation bar inserted after <body ...>.
func withNav(w http.ResponseWriter, doc []byte, at string) {
	var nav bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&nav, "navbar", map[string]any{"At": at}); err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	i := bytes.Index(doc, []byte("<body"))
	j := -1
	if i >= 0 {
		j = bytes.IndexByte(doc[i:], '>')
	}
	if j < 0 {
		w.Write(doc)
		return
	}
	end := i + j + 1
	w.Write(doc[:end])
	w.Write(nav.Bytes())
	w.Write(doc[end:])
}

func sortedTags(m map[string]string) (plain, runs [][2]string) {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, n := range names {
		// run/<id>/<step> on main, <branch>/run/<id>/<step> on a branch.
		if strings.HasPrefix(n, "run/") || strings.Contains(n, "/run/") {
			runs = append(runs, [2]string{n, m[n]})
		} else {
			plain = append(plain, [2]string{n, m[n]})
		}
	}
	return plain, runs
}

// short is a snapshot id's first 12 digits.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
