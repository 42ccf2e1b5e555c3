package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// fromStdin is the argument that stands for an API key read from stdin.
const fromStdin = "-"

// maxKeyLine is the longest line readKey reads: far beyond any header value a gateway
// passes.
const maxKeyLine = 16 << 10

// readKey reads an API key from the first line of stdin, its line break (\n or \r\n)
// dropped: a key given as "-", kept out of the process list and the shell's history. An
// empty stdin or one of more than one line is a usage error; the error never quotes
// what it read.
func readKey(e env) (string, error) {
	if e.stdin == nil {
		return "", fmt.Errorf("%w: %s stands for a key on stdin, and there is no stdin", errUsage, fromStdin)
	}
	r := bufio.NewReaderSize(io.LimitReader(e.stdin, maxKeyLine+2), maxKeyLine+2)
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the key from stdin: %w", err)
	}
	key := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	rest, _ := r.Peek(1)
	switch {
	case strings.Trim(key, " \t") == "":
		return "", fmt.Errorf("%w: %s: stdin is empty: pipe the key, alone on its line", errUsage, fromStdin)
	case len(rest) > 0:
		return "", fmt.Errorf("%w: %s: stdin holds more than one line: give the key alone", errUsage, fromStdin)
	}
	return strings.Trim(key, " \t"), nil
}

// Bounds of keysCreate's guard against keys a dictionary could reverse from their
// digest (see bucketgate.KeyDigest): what a key of 22 random base64url characters has.
const (
	minKeyBits     = 128
	minKeyDistinct = 10
)

// checkEntropy refuses a key chosen outside bucketgate whose unsalted digest (in every
// log line) a dictionary or a search could reverse: fewer than minKeyBits of estimated
// entropy (its length times the bits per character of the character classes it uses:
// digits, lower case, upper case, anything else) or fewer than minKeyDistinct distinct
// characters. The keys keys create makes carry 256 bits from crypto/rand.
func checkEntropy(key string) error {
	var digits, lower, upper, other bool
	distinct := map[rune]bool{}
	for _, c := range key {
		distinct[c] = true
		switch {
		case '0' <= c && c <= '9':
			digits = true
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			other = true
		}
	}
	alphabet := 0
	for _, class := range []struct {
		used bool
		size int
	}{{digits, 10}, {lower, 26}, {upper, 26}, {other, 33}} {
		if class.used {
			alphabet += class.size
		}
	}
	bits := float64(len([]rune(key))) * math.Log2(float64(max(alphabet, 1)))
	if bits < minKeyBits || len(distinct) < minKeyDistinct {
		return fmt.Errorf("%w: --key: the key has about %.0f bits of entropy and %d distinct characters: want %d bits and %d (22 random base64url characters): its digest is in every log line, and a shorter or guessable key can be found from it; let keys create make one",
			errUsage, bits, len(distinct), minKeyBits, minKeyDistinct)
	}
	return nil
}
