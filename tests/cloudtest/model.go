package cloudtest

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// refused holds a request a fake received to the service's published
// model (awsmodel): err is an error reading the request off the wire,
// else the input in of op is validated. A request the model refuses
// fails the test, with the member and the rule, and is returned for the
// fake to answer as the service does (ValidationException); so a test
// cannot pass on a request AWS would refuse.
func refused(t testing.TB, m *awsmodel.Model, op string, in map[string]any, err error) error {
	if err == nil {
		err = m.Validate(op, in)
	}
	if err != nil {
		t.Errorf("AWS would refuse this request to %s: %v", m.Service, err)
	}
	return err
}
