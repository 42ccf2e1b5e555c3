package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// keyTable is the registry table as the CLI writes it: every record is checked against
// the configuration before it is written, as strictly as the functions read it.
type keyTable struct {
	// open finds the table's name, if it is not known yet, and makes db, on the first
	// call; every call returns its error.
	open  func() error
	db    *dynamodb.Client
	name  string
	plans *config.Config
}

// Condition expressions of the writes: a new item, or one that is there.
const (
	isNew    = "attribute_not_exists(#id)"
	isThere  = "attribute_exists(#id)"
	statusIs = "SET #status = :status"
)

// create creates the table.
func (t *keyTable) create(ctx context.Context) error {
	if err := t.open(); err != nil {
		return err
	}
	return t.explain(registry.CreateTable(ctx, t.db, t.name), "")
}

// put writes rec as a new item, after checking it as the functions would read it.
func (t *keyTable) put(ctx context.Context, rec registry.Record) error {
	if err := t.check(rec); err != nil {
		return err
	}
	if err := t.open(); err != nil {
		return err
	}
	_, err := t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(t.name),
		Item:                     rec.Item(),
		ConditionExpression:      aws.String(isNew),
		ExpressionAttributeNames: map[string]string{"#id": registry.KeyAttribute},
	})
	var exists *types.ConditionalCheckFailedException
	if errors.As(err, &exists) {
		return fmt.Errorf("%s is already in table %s", rec.ID, t.name)
	}
	return t.explain(err, rec.ID)
}

// revoke marks the item of id revoked, whatever else it holds.
func (t *keyTable) revoke(ctx context.Context, id string) error {
	if err := t.open(); err != nil {
		return err
	}
	_, err := t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.name),
		Key:                       key(id),
		UpdateExpression:          aws.String(statusIs),
		ConditionExpression:       aws.String(isThere),
		ExpressionAttributeNames:  map[string]string{"#id": registry.KeyAttribute, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":status": &types.AttributeValueMemberS{Value: string(registry.StatusRevoked)}},
	})
	return t.explain(err, id)
}

// change reads the item of id, applies edit, checks the result as the functions would
// read it and writes it back, on the condition that the item is still the one read: a
// write in between (a revocation by someone else) is kept, and change fails.
func (t *keyTable) change(ctx context.Context, id string, edit func(*registry.Record) error) error {
	item, err := t.read(ctx, id)
	if err != nil {
		return err
	}
	rec, err := registry.DecodeItem(item)
	if err != nil {
		return err
	}
	if err := edit(&rec); err != nil {
		return err
	}
	if err := t.check(rec); err != nil {
		return err
	}
	cond, names, values := unchanged(item)
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(t.name),
		Item:                      rec.Item(),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var changed *types.ConditionalCheckFailedException
	if errors.As(err, &changed) {
		return fmt.Errorf("%s changed while this command ran (in table %s): nothing written; run it again", id, t.name)
	}
	return t.explain(err, id)
}

// unchanged returns the condition that an item is still item: every attribute of item
// equal, every other attribute of a record absent.
func unchanged(item map[string]types.AttributeValue) (string, map[string]string, map[string]types.AttributeValue) {
	c := condition{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	for _, attr := range registry.Attributes() {
		if v, ok := item[attr]; ok {
			c.equal(c.name(attr), v)
		} else {
			c.terms = append(c.terms, "attribute_not_exists("+c.name(attr)+")")
		}
	}
	return strings.Join(c.terms, " AND "), c.names, c.values
}

// condition is a condition expression in the making: its terms, joined by AND, and the
// placeholders of the names and values they use.
type condition struct {
	terms  []string
	names  map[string]string // placeholder -> attribute name
	values map[string]types.AttributeValue
}

// equal adds the terms saying that the value at path is v: a list or a map by its size
// and member by member, as dynalite compares documents (DynamoDB compares them whole
// too).
func (c *condition) equal(path string, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberL:
		c.terms = append(c.terms, "size("+path+") = "+c.value(&types.AttributeValueMemberN{Value: strconv.Itoa(len(v.Value))}))
		for i, e := range v.Value {
			c.equal(path+"["+strconv.Itoa(i)+"]", e)
		}
	case *types.AttributeValueMemberM:
		c.terms = append(c.terms, "size("+path+") = "+c.value(&types.AttributeValueMemberN{Value: strconv.Itoa(len(v.Value))}))
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			c.equal(path+"."+c.name(k), v.Value[k])
		}
	default:
		c.terms = append(c.terms, path+" = "+c.value(v))
	}
}

// name returns the placeholder of an attribute name.
func (c *condition) name(n string) string {
	for p, m := range c.names {
		if m == n {
			return p
		}
	}
	p := "#n" + strconv.Itoa(len(c.names))
	c.names[p] = n
	return p
}

// value returns a new placeholder for v.
func (c *condition) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(c.values))
	c.values[p] = v
	return p
}

// check returns why the functions could not use rec, naming the attribute.
func (t *keyTable) check(rec registry.Record) error {
	if _, err := registry.DecodeItem(rec.Item()); err != nil {
		return err
	}
	if _, err := rec.Resolve(t.plans); err != nil {
		if strings.Contains(err.Error(), "unknown plan") {
			return fmt.Errorf("%w (configured: %s)", err, strings.Join(slices.Sorted(slices.Values(t.plans.Plans())), ", "))
		}
		return err
	}
	return nil
}

// get reads the record of id (strongly consistent).
func (t *keyTable) get(ctx context.Context, id string) (registry.Record, error) {
	item, err := t.read(ctx, id)
	if err != nil {
		return registry.Record{}, err
	}
	return registry.DecodeItem(item)
}

// read reads the item of id (strongly consistent), as the table holds it.
func (t *keyTable) read(ctx context.Context, id string) (map[string]types.AttributeValue, error) {
	if err := t.open(); err != nil {
		return nil, err
	}
	out, err := t.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, t.explain(err, id)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("%w: %s is not in table %s", errNoItem, id, t.name)
	}
	return out.Item, nil
}

// listed is one item of a list: its record, or why the functions cannot use it.
type listed struct {
	rec registry.Record
	err error
}

// list reads every item, in the order of their ids.
func (t *keyTable) list(ctx context.Context) ([]listed, error) {
	if err := t.open(); err != nil {
		return nil, err
	}
	var items []listed
	p := dynamodb.NewScanPaginator(t.db, &dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, t.explain(err, "")
		}
		for _, it := range page.Items {
			rec, err := registry.DecodeItem(it)
			if err == nil {
				_, err = rec.Resolve(t.plans)
			}
			items = append(items, listed{rec: rec, err: err})
		}
	}
	slices.SortFunc(items, func(a, b listed) int { return strings.Compare(a.rec.ID, b.rec.ID) })
	return items, nil
}

// key is the primary key of the item of id.
func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: id}}
}

// explain turns DynamoDB's errors about the table or the item of id into ones that say
// what to do.
func (t *keyTable) explain(err error, id string) error {
	var (
		missing *types.ResourceNotFoundException
		inUse   *types.ResourceInUseException
		absent  *types.ConditionalCheckFailedException
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &missing):
		return fmt.Errorf("table %s does not exist: create it with bucketgate keys init (local) or deploy template.yaml: %w", t.name, err)
	case errors.As(err, &inUse):
		return fmt.Errorf("table %s already exists: %w", t.name, err)
	case errors.As(err, &absent):
		return fmt.Errorf("%w: %s is not in table %s", errNoItem, id, t.name)
	}
	return fmt.Errorf("table %s: %w", t.name, err)
}
