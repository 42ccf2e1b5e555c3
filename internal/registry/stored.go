package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
const DocumentAttribute = attrDocument

// Attribute names of a configuration item, beside attrID and attrNote.
const (
	attrDocument  = "document"
	attrVersion   = "version"
	attrUpdatedAt = "updatedAt"
)

// ConfigAttributes returns the name of every attribute a configuration item may hold,
// KeyAttribute first.
func ConfigAttributes() []string {
	return []string{attrID, attrDocument, attrVersion, attrUpdatedAt, attrNote}
}

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

// DecodeConfigItem reads a configuration item strictly: document a non-empty string,
// version a whole number from 1 to MaxVersion, updatedAt whole Unix seconds, note a
// string, and no other attribute. Its error is a *RecordError naming the attribute; the
// returned StoredConfig then still holds what could be read (the version, when it is a
// number), so that the caller can say which version it was.
func DecodeConfigItem(item map[string]types.AttributeValue) (StoredConfig, error) {
	var s StoredConfig
	id, err := stringAttr(item, attrID, true)
	if err != nil {
		return s, &RecordError{ID: "(no id)", Attribute: attrID, Err: err}
	}
	s.ID = id
	s.Version, _ = versionHint(item[attrVersion])
	fail := func(attr string, err error) (StoredConfig, error) {
		return StoredConfig{ID: id, Version: s.Version}, &RecordError{ID: id, Attribute: attr, Err: err}
	}
	if name, err := unknownAttribute(item, ConfigAttributes()); err != nil {
		return fail(name, err)
	}
	if s.Document, err = stringAttr(item, attrDocument, true); err != nil {
		return fail(attrDocument, err)
	}
	if _, err = version(item[attrVersion]); err != nil {
		return fail(attrVersion, err)
	}
	if id != ConfigID && id != VersionID(s.Version) {
		return fail(attrID, fmt.Errorf("%q: want %s or %s, as its version is %d", truncate(id), ConfigID, VersionID(s.Version), s.Version))
	}
	if s.UpdatedAt, err = unixTime(item[attrUpdatedAt]); err != nil {
		return fail(attrUpdatedAt, err)
	}
	if s.Note, err = stringAttr(item, attrNote, false); err != nil {
		return fail(attrNote, err)
	}
	return s, nil
}

// Item returns s as a table item, the form DecodeConfigItem reads: empty attributes
// left out.
func (s StoredConfig) Item() map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrID:       &types.AttributeValueMemberS{Value: s.ID},
		attrDocument: &types.AttributeValueMemberS{Value: s.Document},
		attrVersion:  &types.AttributeValueMemberN{Value: strconv.FormatInt(s.Version, 10)},
	}
	if !s.UpdatedAt.IsZero() {
		item[attrUpdatedAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(s.UpdatedAt.Unix(), 10)}
	}
	if s.Note != "" {
		item[attrNote] = &types.AttributeValueMemberS{Value: s.Note}
	}
	return item
}

// version reads a version value: a whole number from 1 to MaxVersion.
func version(v types.AttributeValue) (int64, error) {
	text, err := number(v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > MaxVersion {
		return 0, fmt.Errorf("%q: want a whole number from 1 to %d", truncate(text), int64(MaxVersion))
	}
	return n, nil
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
