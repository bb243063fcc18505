package tokenizer

// addedMatcher finds added tokens in text the way the reference's
// DictionarySplitter does: scanning left to right, at each position take the
// longest added token starting there. It is a byte trie; on valid UTF-8 this
// equals the reference's UTF-16 trie because matches can only start and end
// on character boundaries.
type addedMatcher struct {
	nodes []trieNode
	first [256]bool // bytes that start some added token: a cheap skip test
}

type trieNode struct {
	next map[byte]int32
	tok  int32 // index into the added tokens, or -1
}

func newAddedMatcher(toks []addedToken) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{tok: -1}}}
	for i, tok := range toks {
		n := int32(0)
		for j := 0; j < len(tok.content); j++ {
			c := tok.content[j]
			if m.nodes[n].next == nil {
				m.nodes[n].next = map[byte]int32{}
			}
			nx, ok := m.nodes[n].next[c]
			if !ok {
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{tok: -1})
				m.nodes[n].next[c] = nx
			}
			n = nx
		}
		// A repeated content takes its last entry, as in the reference's
		// Maps built from added_tokens.
		m.nodes[n].tok = int32(i)
		m.first[tok.content[0]] = true
	}
	return m
}

// longest returns the index of the longest added token that starts at s[i:]
// and its length, or -1.
func (m *addedMatcher) longest(s string, i int) (tok int32, n int) {
	tok = -1
	node := int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := m.nodes[node].next[s[j]]
		if !ok {
			break
		}
		node = nx
		if m.nodes[node].tok >= 0 {
			tok, n = m.nodes[node].tok, j+1-i
		}
	}
	return tok, n
}

// splitAdded cuts text into added-token and text sections, then applies the
// added tokens' lstrip/rstrip to the neighbouring text like the reference
// (trimming JS whitespace).
func (t *Tokenizer) splitAdded(text string, secs []section) []section {
	m := t.addedTrie
	if len(t.addedToks) == 0 {
		return append(secs, section{0, len(text), -1})
	}
	start := 0
	for i := 0; i < len(text); {
		if !m.first[text[i]] {
			i++
			continue
		}
		tok, n := m.longest(text, i)
		if tok < 0 {
			i++
			continue
		}
		if i > start {
			secs = append(secs, section{start, i, -1})
		}
		secs = append(secs, section{i, i + n, tok})
		i += n
		start = i
	}
	if start < len(text) {
		secs = append(secs, section{start, len(text), -1})
	}
	for k, sec := range secs {
		if sec.added < 0 {
			continue
		}
		at := t.addedToks[sec.added]
		if at.lstrip && k > 0 && secs[k-1].added < 0 {
			p := &secs[k-1]
			p.end = p.start + len(trimRightJSSpace(text[p.start:p.end]))
		}
		if at.rstrip && k+1 < len(secs) && secs[k+1].added < 0 {
			nx := &secs[k+1]
			nx.start = nx.end - len(trimLeftJSSpace(text[nx.start:nx.end]))
		}
	}
	return secs
}

func trimLeftJSSpace(s string) string {
	for len(s) > 0 {
		r, n := decodeRune(s, 0)
		if classOf(r)&clsS == 0 {
			break
		}
		s = s[n:]
	}
	return s
}

func trimRightJSSpace(s string) string {
	for len(s) > 0 {
		r, n := lastRune(s)
		if classOf(r)&clsS == 0 {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}
