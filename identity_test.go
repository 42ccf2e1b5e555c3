package bucketgate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
)

// An API key is spelled by its digest, the first 32 hex digits of its SHA-256: what
// `printf %s "$KEY" | sha256sum | cut -c1-32` prints.
func TestKeyIdentity(t *testing.T) {
	id := bucketgate.KeyIdentity("bg-sample-pro-key")
	if id.String() != bucketgate.KeyPrefix+id.Value || !bucketgate.ValidDigest(id.Value) || id.Value != bucketgate.KeyDigest("bg-sample-pro-key") {
		t.Fatalf("KeyIdentity = %q", id)
	}
	if got := bucketgate.KeyDigest("abc"); got != "ba7816bf8f01cfea414140de5dae2223" {
		t.Fatalf("KeyDigest(abc) = %s, want the first 32 hex digits of SHA-256(abc)", got)
	}
	for _, s := range []string{"", "BA7816BF8F01CFEA414140DE5DAE2223", "ba7816bf8f01cfea414140de5dae222", "ba7816bf8f01cfea414140de5dae2223a", "zz7816bf8f01cfea414140de5dae2223"} {
		if bucketgate.ValidDigest(s) {
			t.Errorf("ValidDigest(%q) = true", s)
		}
	}
}

// An operation's JSON is its name; an unknown name is an error naming those there are.
func TestOpText(t *testing.T) {
	for _, op := range []bucketgate.Op{bucketgate.OpCheck, bucketgate.OpRefund, bucketgate.OpReset, bucketgate.OpUsage,
		bucketgate.OpReserve, bucketgate.OpSettle, bucketgate.OpCancel, bucketgate.OpRelease} {
		b, err := json.Marshal(op)
		var back bucketgate.Op
		if err != nil || string(b) != `"`+op.String()+`"` || json.Unmarshal(b, &back) != nil || back != op {
			t.Errorf("%v: %s, %v, back %v", op, b, err, back)
		}
		if p, ok := bucketgate.ParseOp(op.String()); !ok || p != op {
			t.Errorf("ParseOp(%q) = %v, %v", op, p, ok)
		}
	}
	var op bucketgate.Op
	if err := op.UnmarshalText([]byte("Reset")); err == nil || err.Error() != `unknown operation "Reset": want check, refund, reset, usage, reserve, settle, cancel or release` {
		t.Errorf("UnmarshalText(Reset) = %v", err)
	}
	if _, err := json.Marshal(bucketgate.OpRelease + 1); err == nil {
		t.Error("an unknown operation marshals")
	}
}

// An account's name is 1 to MaxAccountName letters, digits, '.', '_' or '-'; its
// identity is acct:<name>, apart from every other kind's.
func TestAccountName(t *testing.T) {
	for _, name := range []string{"acme", "a", "Acme_Corp-2.eu", strings.Repeat("x", bucketgate.MaxAccountName)} {
		if !bucketgate.ValidAccountName(name) {
			t.Errorf("ValidAccountName(%q) = false", name)
		}
	}
	for _, name := range []string{"", "a b", "a:b", "a/b", "ü", "{acme}", strings.Repeat("x", bucketgate.MaxAccountName+1)} {
		if bucketgate.ValidAccountName(name) {
			t.Errorf("ValidAccountName(%q) = true", name)
		}
	}
	id := bucketgate.Identity{Kind: bucketgate.KindAccount, Value: "acme"}
	if id.String() != "acct:acme" || bucketgate.AccountPrefix != "acct:" || bucketgate.LogForm(id.String()) != "acct:acme" {
		t.Errorf("account identity %q, prefix %q, logged %q", id, bucketgate.AccountPrefix, bucketgate.LogForm(id.String()))
	}
}

// Every error of reading or writing an Op or a Period by name is an ErrInvalid, as
// errors.Is tells, directly and through encoding/json, with its message as it was.
func TestNameErrorsAreInvalid(t *testing.T) {
	var op bucketgate.Op
	var p bucketgate.Period
	var doc struct {
		Op     bucketgate.Op     `json:"op"`
		Period bucketgate.Period `json:"period"`
	}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"Op.UnmarshalText", func() error { return op.UnmarshalText([]byte("take")) }, `unknown operation "take": want check,`},
		{"Op.MarshalText", func() error { _, err := (bucketgate.OpRelease + 1).MarshalText(); return err }, "invalid: operation Op(8)"},
		{"Op in JSON", func() error { return json.Unmarshal([]byte(`{"op":"take"}`), &doc) }, `unknown operation "take"`},
		{"Period.UnmarshalText", func() error { return p.UnmarshalText([]byte("year")) }, `unknown period "year": want day, week or month`},
		{"Period.MarshalText", func() error { _, err := bucketgate.PeriodNone.MarshalText(); return err }, "invalid: period"},
		{"Period in JSON", func() error { return json.Unmarshal([]byte(`{"period":"year"}`), &doc) }, `unknown period "year"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if !errors.Is(err, bucketgate.ErrInvalid) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v: want an ErrInvalid starting %q", err, tt.want)
			}
		})
	}
}
