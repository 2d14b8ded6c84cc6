package dynamodb

import (
	"encoding/json"
	"fmt"
)

// AttributeValue is a value of an item's attribute: one of the
// AttributeValueMember types, each marshalled as DynamoDB's JSON says
// ({"S":…}, {"N":…}, {"B":base64}, {"BOOL":…}, {"NULL":true}, {"SS":[…]},
// {"NS":[…]}, {"BS":[…]}, {"L":[…]}, {"M":{…}}).
type AttributeValue interface {
	json.Marshaler
	isAttributeValue()
}

// AttributeValueMemberS is a string.
type AttributeValueMemberS struct{ Value string }

// AttributeValueMemberN is a number, in its decimal text.
type AttributeValueMemberN struct{ Value string }

// AttributeValueMemberB is binary data.
type AttributeValueMemberB struct{ Value []byte }

// AttributeValueMemberBOOL is a boolean.
type AttributeValueMemberBOOL struct{ Value bool }

// AttributeValueMemberNULL is null (Value true).
type AttributeValueMemberNULL struct{ Value bool }

// AttributeValueMemberSS is a set of strings.
type AttributeValueMemberSS struct{ Value []string }

// AttributeValueMemberNS is a set of numbers.
type AttributeValueMemberNS struct{ Value []string }

// AttributeValueMemberBS is a set of binary values.
type AttributeValueMemberBS struct{ Value [][]byte }

// AttributeValueMemberL is a list.
type AttributeValueMemberL struct{ Value []AttributeValue }

// AttributeValueMemberM is a map.
type AttributeValueMemberM struct{ Value map[string]AttributeValue }

func (AttributeValueMemberS) isAttributeValue()    {}
func (AttributeValueMemberN) isAttributeValue()    {}
func (AttributeValueMemberB) isAttributeValue()    {}
func (AttributeValueMemberBOOL) isAttributeValue() {}
func (AttributeValueMemberNULL) isAttributeValue() {}
func (AttributeValueMemberSS) isAttributeValue()   {}
func (AttributeValueMemberNS) isAttributeValue()   {}
func (AttributeValueMemberBS) isAttributeValue()   {}
func (AttributeValueMemberL) isAttributeValue()    {}
func (AttributeValueMemberM) isAttributeValue()    {}

func (v AttributeValueMemberS) MarshalJSON() ([]byte, error)    { return member("S", v.Value) }
func (v AttributeValueMemberN) MarshalJSON() ([]byte, error)    { return member("N", v.Value) }
func (v AttributeValueMemberB) MarshalJSON() ([]byte, error)    { return member("B", v.Value) }
func (v AttributeValueMemberBOOL) MarshalJSON() ([]byte, error) { return member("BOOL", v.Value) }
func (v AttributeValueMemberNULL) MarshalJSON() ([]byte, error) { return member("NULL", v.Value) }
func (v AttributeValueMemberSS) MarshalJSON() ([]byte, error)   { return member("SS", v.Value) }
func (v AttributeValueMemberNS) MarshalJSON() ([]byte, error)   { return member("NS", v.Value) }
func (v AttributeValueMemberBS) MarshalJSON() ([]byte, error)   { return member("BS", v.Value) }
func (v AttributeValueMemberL) MarshalJSON() ([]byte, error)    { return member("L", v.Value) }
func (v AttributeValueMemberM) MarshalJSON() ([]byte, error)    { return member("M", v.Value) }

// member marshals {"<typ>": v}. A list or set that is nil is sent empty,
// as the SDK sends it.
func member[T any](typ string, v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		switch typ {
		case "M":
			b = []byte("{}")
		case "L", "SS", "NS", "BS":
			b = []byte("[]")
		}
	}
	out := make([]byte, 0, len(typ)+len(b)+5)
	out = append(out, `{"`...)
	out = append(out, typ...)
	out = append(out, `":`...)
	out = append(out, b...)
	return append(out, '}'), nil
}

// item decodes an item: a map of attribute values.
type item map[string]AttributeValue

func (m *item) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*m = nil
		return nil
	}
	out := make(item, len(raw))
	for k, r := range raw {
		v, err := decodeValue(r)
		if err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = v
	}
	*m = out
	return nil
}

// items decodes a list of items.
type items []item

// plain returns the items as the exported types hold them.
func (its items) plain() []map[string]AttributeValue {
	if its == nil {
		return nil
	}
	out := make([]map[string]AttributeValue, len(its))
	for i, it := range its {
		out[i] = it
	}
	return out
}

// decodeValue decodes one attribute value of DynamoDB's JSON.
func decodeValue(b []byte) (AttributeValue, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if len(raw) != 1 {
		return nil, fmt.Errorf("an attribute value has %d members, want 1", len(raw))
	}
	for typ, r := range raw {
		switch typ {
		case "S":
			v := &AttributeValueMemberS{}
			return v, json.Unmarshal(r, &v.Value)
		case "N":
			v := &AttributeValueMemberN{}
			return v, json.Unmarshal(r, &v.Value)
		case "B":
			v := &AttributeValueMemberB{}
			return v, json.Unmarshal(r, &v.Value)
		case "BOOL":
			v := &AttributeValueMemberBOOL{}
			return v, json.Unmarshal(r, &v.Value)
		case "NULL":
			v := &AttributeValueMemberNULL{}
			return v, json.Unmarshal(r, &v.Value)
		case "SS":
			v := &AttributeValueMemberSS{}
			return v, json.Unmarshal(r, &v.Value)
		case "NS":
			v := &AttributeValueMemberNS{}
			return v, json.Unmarshal(r, &v.Value)
		case "BS":
			v := &AttributeValueMemberBS{}
			return v, json.Unmarshal(r, &v.Value)
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(r, &l); err != nil {
				return nil, err
			}
			v := &AttributeValueMemberL{Value: make([]AttributeValue, len(l))}
			for i, e := range l {
				var err error
				if v.Value[i], err = decodeValue(e); err != nil {
					return nil, fmt.Errorf("L[%d]: %w", i, err)
				}
			}
			return v, nil
		case "M":
			var m item
			if err := json.Unmarshal(r, &m); err != nil {
				return nil, err
			}
			if m == nil {
				m = item{}
			}
			return &AttributeValueMemberM{Value: m}, nil
		default:
			return nil, fmt.Errorf("unknown attribute value type %q", typ)
		}
	}
	panic("unreachable")
}
