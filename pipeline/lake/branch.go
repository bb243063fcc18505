package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Branches returns branch name -> head snapshot id for every ref under
// refs/heads/, main included once it exists. A corrupt ref is an error.
func (l *Lake) Branches(ctx context.Context) (map[string]string, error) {
	keys, err := l.store.List(ctx, headsDir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		id, err := l.readRef(ctx, k)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(k, headsDir)] = id
	}
	return out, nil
}

// CreateBranch points a new branch name at the snapshot from names (a
// snapshot id, a tag, a branch; "" is the handle's branch head). The name
// goes through ValidateRefName; it may not be taken by a tag, nor be a
// folder of an existing branch or lie under one (refs/heads/a and
// refs/heads/a/b cannot both be files; main counts as existing). Creating
// a branch that already points at the same snapshot is a no-op; one that
// points elsewhere is ErrExist.
func (l *Lake) CreateBranch(ctx context.Context, name, from string) (string, error) {
	if err := ValidateRefName(name); err != nil {
		return "", fmt.Errorf("branch create: %w", err)
	}
	if err := l.claimable(ctx, headsDir, tagsDir, "tag", name); err != nil {
		return "", fmt.Errorf("branch create %s: %w", name, err)
	}
	id, err := l.Resolve(ctx, from)
	if err != nil {
		return "", fmt.Errorf("branch create %s: --from: %w", name, err)
	}
	key := headsDir + name
	err = l.store.PutIfAbsent(ctx, key, formatRef(id))
	if errors.Is(err, ErrExist) {
		cur, err := l.readRef(ctx, key)
		if err != nil {
			return "", fmt.Errorf("branch create %s: %w", name, err)
		}
		if cur == id {
			return id, nil
		}
		return "", fmt.Errorf("branch %s already exists at %s: %w", name, short(cur), ErrExist)
	}
	if err != nil {
		return "", fmt.Errorf("branch create %s: %w", name, err)
	}
	return id, nil
}

// DeleteBranch removes refs/heads/name and returns the snapshot it pointed
// at. Only the ref goes: every snapshot stays in the lake and gc keeps the
// files of every manifest, so data reached through the branch (or any other
// ref) is never deleted. main cannot be deleted. A commit landing on the
// branch while it is deleted either fails (ErrNotExist) or is left
// reachable only by its snapshot id.
func (l *Lake) DeleteBranch(ctx context.Context, name string) (string, error) {
	if name == MainRef {
		return "", fmt.Errorf("branch delete: %w %q: main is the main branch and cannot be deleted", ErrInvalidRefName, name)
	}
	if err := ValidateRefName(name); err != nil {
		return "", fmt.Errorf("branch delete: %w", err)
	}
	key := headsDir + name
	id, err := l.readRef(ctx, key)
	if errors.Is(err, ErrNotExist) {
		return "", fmt.Errorf("branch delete %s: no such branch in lake %s: %w", name, l, ErrNotExist)
	}
	if err != nil {
		// A corrupt branch is still deletable: that is how one repairs it.
		if !errors.Is(err, ErrCorrupt) {
			return "", fmt.Errorf("branch delete %s: %w", name, err)
		}
		id = ""
	}
	if err := l.store.Delete(ctx, key); err != nil {
		return "", fmt.Errorf("branch delete %s: %w", name, err)
	}
	if loc, ok := l.store.(*Local); ok {
		if err := loc.forgetRef(key, headsDir); err != nil {
			return id, fmt.Errorf("branch delete %s: the branch is deleted, but: %w", name, err)
		}
	}
	// The branch's resume tags (<name>/run/<id>/<step>, see loop.DoneTag)
	// go with it: a branch of that name created again starts its runs
	// over instead of resuming from snapshots it does not reach.
	runTags, err := l.store.List(ctx, tagsDir+name+"/run/")
	if err != nil {
		return id, fmt.Errorf("branch delete %s: the branch is deleted, but listing its run tags: %w", name, err)
	}
	for _, k := range runTags {
		if err := l.store.Delete(ctx, k); err != nil {
			return id, fmt.Errorf("branch delete %s: the branch is deleted, but its run tag %s: %w", name, strings.TrimPrefix(k, tagsDir), err)
		}
		if loc, ok := l.store.(*Local); ok {
			if err := loc.forgetRef(k, tagsDir); err != nil {
				return id, fmt.Errorf("branch delete %s: the branch is deleted, but: %w", name, err)
			}
		}
	}
	return id, nil
}

// checkRefPath refuses a name whose key under dir would be a folder of an
// existing ref, or lie under one (a/b beside a): an object store could hold
// both, a folder cannot, and every backend keeps the same names. In
// refs/heads/, main counts as existing even before the first commit.
func (l *Lake) checkRefPath(ctx context.Context, dir, name string) error {
	keys, err := l.store.List(ctx, dir)
	if err != nil {
		return err
	}
	names := []string{}
	for _, k := range keys {
		names = append(names, strings.TrimPrefix(k, dir))
	}
	if dir == headsDir {
		names = append(names, MainRef)
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(name, n+"/"):
			return fmt.Errorf("%w %q: %s%s exists, so %s cannot be a folder", ErrInvalidRefName, name, dir, n, n)
		case strings.HasPrefix(n, name+"/"):
			return fmt.Errorf("%w %q: %s%s exists, so %s is a folder", ErrInvalidRefName, name, dir, n, name)
		}
	}
	return nil
}
