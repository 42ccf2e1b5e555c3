package registry_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
)

// docV1 and docV2 are two versions of a document: pro's burst is 100, then 200.
const (
	docV1 = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 100, refillPerSecond: 50}]}\n"
	docV2 = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 200, refillPerSecond: 50}]}\n"
)

// configItem is a valid configuration item of version 3, with extra attributes set
// (nil deletes).
func configItem(extra ...any) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{"id": s("config"), "document": s(docV1), "version": n("3"), "updatedAt": n("1800000000"), "note": s("gold plan")}
	for i := 0; i < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(it, extra[i].(string))
			continue
		}
		it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
	}
	return it
}

func TestDecodeConfigItem(t *testing.T) {
	got, err := registry.DecodeConfigItem(configItem())
	want := registry.StoredConfig{ID: "config", Document: docV1, Version: 3, UpdatedAt: time.Unix(1800000000, 0), Note: "gold plan"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeConfigItem = %+v, %v; want %+v", got, err, want)
	}
	if again, err := registry.DecodeConfigItem(want.Item()); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip through Item: %+v, %v", again, err)
	}
	copyOf, err := registry.DecodeConfigItem(configItem("id", s("config#3"), "note", nil, "updatedAt", nil))
	if err != nil || copyOf.ID != "config#3" || copyOf.Note != "" || !copyOf.UpdatedAt.IsZero() {
		t.Fatalf("a copy with no note or time: %+v, %v", copyOf, err)
	}
	tests := []struct {
		name, attribute, want string
		item                  map[string]types.AttributeValue
		version               int64 // what could be read of the version
	}{
		{"version a string", "version", "got a string (S), want a number (N)", configItem("version", s("3")), 3},
		{"version not whole", "version", `"1.5": want a whole number from 1 to 9007199254740992`, configItem("version", n("1.5")), 0},
		{"version zero", "version", `"0": want a whole number`, configItem("version", n("0")), 0},
		{"version too large", "version", "want a whole number", configItem("version", n("9007199254740993")), 0},
		{"no version", "version", "missing", configItem("version", nil), 0},
		{"document a number", "document", "got a number (N), want a string (S)", configItem("document", n("1")), 3},
		{"document a map", "document", "got a map (M), want a string (S)", configItem("document", m("plans", s("x"))), 3},
		{"empty document", "document", "empty", configItem("document", s("")), 3},
		{"no document", "document", "missing: every item needs a document", configItem("document", nil), 3},
		{"updatedAt a string", "updatedAt", "got a string (S), want a number (N)", configItem("updatedAt", s("yesterday")), 3},
		{"note a number", "note", "want a string (S)", configItem("note", n("1")), 3},
		{"unknown attribute", `"plans"`, "unknown attribute (want id, document, version, updatedAt or note)", configItem("plans", s("x")), 3},
		{"a copy of another version", "id", `"config#2": want config or config#3`, configItem("id", s("config#2")), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := registry.DecodeConfigItem(tc.item)
			var re *registry.RecordError
			if !errors.As(err, &re) || re.Attribute != tc.attribute || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want attribute %s: %s", err, tc.attribute, tc.want)
			}
			if got.Version != tc.version {
				t.Errorf("version read %d, want %d (where a fresh instance starts looking)", got.Version, tc.version)
			}
		})
	}
}

func TestLoadDocument(t *testing.T) {
	if c, err := registry.LoadDocument([]byte(docV1)); err != nil || c.DefaultPlan().Name != "free" {
		t.Fatalf("LoadDocument = %v, %v", c, err)
	}
	tests := []struct{ name, doc, want string }{
		{"keys", docV1 + "keys: {0123456789abcdef0123456789abcdef: pro}\n", "keys, tenants: a document in the registry table lists no keys or tenants"},
		{"tenants", docV1 + "tenants: {t1: pro}\n", "lists no keys or tenants"},
		{"not UTF-8", docV1 + "# \xff\n", "the document is not UTF-8 text"},
		{"unknown field", docV1 + "plan: free\n", "plan (line 3, column 1): unknown field; did you mean plans?"},
		{"rule out of range", "defaultPlan: free\nplans: {free: [{name: burst, capacity: 0, refillPerSecond: 1}]}", "plans.free[0]"},
		{"not YAML", "defaultPlan: [free", "rate-limit configuration"},
		{"too large", docV1 + "#" + strings.Repeat("x", config.MaxDocument), "want at most 262144"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.LoadDocument([]byte(tc.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one wrapping ErrConfig naming %q", err, tc.want)
			}
		})
	}
	_, err := registry.StoredConfig{ID: "config", Version: 7, Document: docV1 + "plan: free\n"}.Load()
	if err == nil || !strings.HasPrefix(err.Error(), "configuration version 7 (config): rate-limit configuration: plan (line 3, column 1)") {
		t.Fatalf("Load: %v, want the version and the field", err)
	}
}

// Configuration items as DynamoDB holds them, hand-written ones too, read through its
// own API as dynalite serves it.
func TestTableConfig(t *testing.T) {
	client := dynalite.Table(t, "bucketgate-keys")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, it := range []map[string]types.AttributeValue{
		configItem(),
		configItem("id", s("config#2"), "version", s("2")),
		configItem("id", s("config#1"), "version", n("1"), "document", n("1")),
	} {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bucketgate-keys"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	table := registry.NewTable(client, "bucketgate-keys")
	got, found, err := table.GetConfig(ctx, registry.ConfigID)
	if err != nil || !found || got.Version != 3 || got.Document != docV1 || got.Note != "gold plan" {
		t.Fatalf("GetConfig(config) = %+v, %v, %v", got, found, err)
	}
	if _, found, err := table.GetConfig(ctx, registry.VersionID(9)); found || err != nil {
		t.Fatalf("a version the table does not hold: %v, %v", found, err)
	}
	for id, want := range map[string]string{"config#2": "attribute version: got a string (S)", "config#1": "attribute document: got a number (N)"} {
		_, found, err := table.GetConfig(ctx, id)
		if !found || !errors.Is(err, registry.ErrInvalidRecord) || !strings.Contains(err.Error(), want) {
			t.Errorf("GetConfig(%s) = %v, %v; want an invalid item: %s", id, found, err, want)
		}
	}
	if _, _, err := registry.NewTable(client, "no-such-table").GetConfig(ctx, registry.ConfigID); err == nil || errors.Is(err, registry.ErrInvalidRecord) {
		t.Fatalf("a missing table: %v, want DynamoDB's error", err)
	}
}

// FuzzDecodeConfigItem builds configuration items of every shape from the fuzzer's
// strings and a bit mask of types: DecodeConfigItem never panics, refuses with a
// *RecordError naming the item and an attribute, or returns a StoredConfig that Item
// writes back unchanged; Load of one either loads or says which version does not.
func FuzzDecodeConfigItem(f *testing.F) {
	f.Add("config", docV1, "3", "1800000000", "note", uint8(0))
	f.Add("config#3", docV1, "3", "1800000000", "", uint8(0b0000_0100))
	f.Add("config#7", "plans: {", "7.0", "-1", "x", uint8(0b0001_0011))
	f.Add("", "", "9007199254740993", "1e3", "", uint8(0b1110_1000))
	f.Fuzz(func(t *testing.T, id, doc, version, updated, note string, shape uint8) {
		it := map[string]types.AttributeValue{"id": s(id), "document": s(doc), "version": n(version), "updatedAt": n(updated), "note": s(note)}
		bit := func(i uint) bool { return shape&(1<<i) != 0 }
		if bit(0) {
			it["version"] = s(version)
		}
		if bit(1) {
			it["updatedAt"] = s(updated)
		}
		if bit(2) {
			delete(it, "updatedAt")
		}
		if bit(3) {
			delete(it, "document")
		}
		if bit(4) {
			it["document"] = n(doc)
		}
		if bit(5) {
			it[note] = s(note)
		}
		if bit(6) {
			delete(it, "id")
		}
		if bit(7) {
			it["note"] = l(s(note))
		}
		got, err := registry.DecodeConfigItem(it)
		if err != nil {
			var re *registry.RecordError
			wantID := id // an empty id DynamoDB never holds: a key is never empty
			if bit(6) {
				wantID = "(no id)"
			}
			if !errors.As(err, &re) || re.Attribute == "" || re.ID != wantID {
				t.Fatalf("DecodeConfigItem error %v: want a *RecordError naming item and attribute", err)
			}
			return
		}
		back, err := registry.DecodeConfigItem(got.Item())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("Item round trip: %+v, %v; want %+v", back, err, got)
		}
		if _, err := got.Load(); err != nil && !strings.Contains(err.Error(), "configuration version "+strconv.FormatInt(got.Version, 10)) {
			t.Fatalf("Load error %v does not name version %d", err, got.Version)
		}
	})
}
