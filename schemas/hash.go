package schemas

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashBytes returns the lowercase hex sha256 of b, the content address used
// for blobs and data files.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
