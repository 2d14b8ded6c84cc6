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
	var w map[string]wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	v, err := fromWire(w)
	*m = v
	return err
}

// items decodes a list of items.
type items []map[string]AttributeValue

func (l *items) UnmarshalJSON(b []byte) error {
	var w []map[string]wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	v, err := fromWires(w)
	*l = v
	return err
}

// fromWires returns the items of w; nil for nil.
func fromWires(w []map[string]wire) ([]map[string]AttributeValue, error) {
	if w == nil {
		return nil, nil
	}
	out := make([]map[string]AttributeValue, len(w))
	for i, it := range w {
		var err error
		if out[i], err = fromWire(it); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return out, nil
}

// wire is an attribute value as DynamoDB's JSON has it, a member set of
// one type. Items are decoded into wires in one pass of the JSON, then
// into AttributeValues: an Unmarshaler at each level would read a value
// again at each level it is nested in.
type wire struct {
	S, N       *string
	B          *[]byte
	BOOL, NULL *bool
	SS, NS     *[]string
	BS         *[][]byte
	L          *[]wire
	M          *map[string]wire
}

// fromWire returns the attribute values of w; nil for nil.
func fromWire(w map[string]wire) (map[string]AttributeValue, error) {
	if w == nil {
		return nil, nil
	}
	out := make(map[string]AttributeValue, len(w))
	for k, e := range w {
		v, err := e.value()
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// value returns the attribute value w holds.
func (w wire) value() (AttributeValue, error) {
	var v AttributeValue
	n := 0
	set := func(a AttributeValue) { v = a; n++ }
	if w.S != nil {
		set(&AttributeValueMemberS{Value: *w.S})
	}
	if w.N != nil {
		set(&AttributeValueMemberN{Value: *w.N})
	}
	if w.B != nil {
		set(&AttributeValueMemberB{Value: *w.B})
	}
	if w.BOOL != nil {
		set(&AttributeValueMemberBOOL{Value: *w.BOOL})
	}
	if w.NULL != nil {
		set(&AttributeValueMemberNULL{Value: *w.NULL})
	}
	if w.SS != nil {
		set(&AttributeValueMemberSS{Value: *w.SS})
	}
	if w.NS != nil {
		set(&AttributeValueMemberNS{Value: *w.NS})
	}
	if w.BS != nil {
		set(&AttributeValueMemberBS{Value: *w.BS})
	}
	if w.L != nil {
		l := &AttributeValueMemberL{Value: make([]AttributeValue, len(*w.L))}
		for i, e := range *w.L {
			var err error
			if l.Value[i], err = e.value(); err != nil {
				return nil, fmt.Errorf("L[%d]: %w", i, err)
			}
		}
		set(l)
	}
	if w.M != nil {
		m, err := fromWire(*w.M)
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = map[string]AttributeValue{}
		}
		set(&AttributeValueMemberM{Value: m})
	}
	if n != 1 {
		return nil, fmt.Errorf("an attribute value of %d types, want 1", n)
	}
	return v, nil
}

// decodeValue decodes one attribute value of DynamoDB's JSON.
func decodeValue(b []byte) (AttributeValue, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	return w.value()
}
