package registry

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/config"
)

// ConfigID is the id of the item that holds the configuration document in force (see
// StoredConfig); VersionID gives the ids of its immutable copies, one per version.
const ConfigID = "config"

// VersionPrefix starts the id of every copy of a version of the configuration.
const VersionPrefix = ConfigID + "#"

// VersionID returns the id of the immutable copy of version v of the configuration
// document: "config#<v>".
func VersionID(v int64) string { return VersionPrefix + strconv.FormatInt(v, 10) }

// IsConfigID reports whether id is the configuration's item or one of its copies:
// items that are not identities.
func IsConfigID(id string) bool { return id == ConfigID || strings.HasPrefix(id, VersionPrefix) }

// DocumentAttribute is the attribute of a configuration item that holds the document.
const DocumentAttribute = "document"

// configItem is a configuration item as the table holds it (attributevalue's shape of
// a StoredConfig), in the order DecodeConfigItem checks its attributes.
type configItem struct {
	ID        string `dynamodbav:"id"`
	Document  string `dynamodbav:"document"`
	Version   int64  `dynamodbav:"version"`
	UpdatedAt int64  `dynamodbav:"updatedAt,omitempty"`
	Note      string `dynamodbav:"note,omitempty"`
}

// ConfigAttributes returns the name of every attribute a configuration item may hold,
// KeyAttribute first.
func ConfigAttributes() []string { return fieldNames(reflect.TypeFor[configItem]()) }

// MaxVersion is the highest version a configuration item may hold: the largest whole
// number a DynamoDB number and a float64 both hold exactly (2^53).
const MaxVersion = 1 << 53

// StoredConfig is the configuration document as the registry table holds it: the item
// ConfigID (the version in force) or VersionID(Version) (its copy).
type StoredConfig struct {
	// ID is the item's id: ConfigID or VersionID(Version).
	ID string
	// Document is the document, YAML or JSON, in the schema of RATE_LIMIT_CONFIG; it
	// lists no keys or tenants (the table is the registry). Required.
	Document string
	// Version numbers the document's versions: 1, 2, 3, ... Required.
	Version int64
	// UpdatedAt is when this version was written, to the second; zero when unknown.
	UpdatedAt time.Time
	// Note says why, for people.
	Note string
}

// DecodeConfigItem reads a configuration item strictly, as DecodeItem reads a record:
// document a non-empty string, version a whole number from 1 to MaxVersion, updatedAt
// whole Unix seconds, note a string, and no other attribute. Its error is a
// *RecordError naming the attribute; the returned StoredConfig then still holds what
// could be read (the version, even one written as a string), so that the caller can
// say which version it was and where to look for a copy.
func DecodeConfigItem(av map[string]types.AttributeValue) (StoredConfig, error) {
	var it configItem
	if id, ok := av[attrID].(*types.AttributeValueMemberS); ok {
		it.ID = id.Value
	}
	hint, _ := versionHint(av["version"])
	fail := func(attr string, err error) (StoredConfig, error) {
		id := it.ID
		if _, ok := av[attrID].(*types.AttributeValueMemberS); !ok {
			id = "(no id)"
		}
		return StoredConfig{ID: it.ID, Version: hint}, &RecordError{ID: id, Attribute: attr, Err: err}
	}
	if attr, err := decodeMap("", av, reflect.ValueOf(&it).Elem()); err != nil {
		return fail(attr, err)
	}
	switch {
	case it.ID == "":
		return fail(attrID, fmt.Errorf("empty"))
	case it.Document == "":
		return fail(DocumentAttribute, fmt.Errorf("empty"))
	case it.Version < 1 || it.Version > MaxVersion:
		return fail("version", fmt.Errorf("%q: want %s", quoted(number(av["version"])), numberWants["version"]))
	case it.ID != ConfigID && it.ID != VersionID(it.Version):
		return fail(attrID, fmt.Errorf("%q: want %s or %s, as its version is %d", quoted(it.ID), ConfigID, VersionID(it.Version), it.Version))
	case av["updatedAt"] != nil && (it.UpdatedAt < 1 || it.UpdatedAt > MaxExpiresAt):
		return fail("updatedAt", fmt.Errorf("%q: want %s", quoted(number(av["updatedAt"])), numberWants["updatedAt"]))
	}
	s := StoredConfig{ID: it.ID, Document: it.Document, Version: it.Version, Note: it.Note}
	if it.UpdatedAt != 0 {
		s.UpdatedAt = time.Unix(it.UpdatedAt, 0)
	}
	return s, nil
}

// Item returns s as a table item, the form DecodeConfigItem reads: empty attributes
// left out.
func (s StoredConfig) Item() map[string]types.AttributeValue {
	it := configItem{ID: s.ID, Document: s.Document, Version: s.Version, Note: s.Note}
	if !s.UpdatedAt.IsZero() {
		it.UpdatedAt = s.UpdatedAt.Unix()
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		panic("registry: a configuration item of strings and numbers does not marshal: " + err.Error())
	}
	return av
}

// versionHint returns the version that v says, even written as a string ("7") by a
// hand that got its type wrong: where to start looking for a copy that loads.
func versionHint(v types.AttributeValue) (int64, bool) {
	var text string
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		text = v.Value
	case *types.AttributeValueMemberS:
		text = strings.TrimSpace(v.Value)
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > MaxVersion {
		return 0, false
	}
	return n, true
}

// ErrDocumentListsIdentities is wrapped by LoadDocument's error for a document that
// lists keys or tenants.
var ErrDocumentListsIdentities = errors.New("keys, tenants: a document in the registry table lists no keys or tenants: the table is the registry (bucketgate keys create)")

// LoadDocument loads a configuration document as the functions load one from the
// registry table: config.Parse, UTF-8 text (DynamoDB's strings are), and no keys or
// tenants. Every error wraps config.ErrConfig and names the field.
func LoadDocument(doc []byte) (*config.Config, error) {
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: the document is not UTF-8 text", config.ErrConfig)
	}
	c, err := config.Parse(doc)
	if err != nil {
		return nil, err
	}
	if c.ListsIdentities() {
		return nil, fmt.Errorf("%w: %w", config.ErrConfig, ErrDocumentListsIdentities)
	}
	return c, nil
}

// Load loads s's document with LoadDocument; its error names the version.
func (s StoredConfig) Load() (*config.Config, error) {
	c, err := LoadDocument([]byte(s.Document))
	if err != nil {
		return nil, fmt.Errorf("configuration version %d (%s): %w", s.Version, s.ID, err)
	}
	return c, nil
}
