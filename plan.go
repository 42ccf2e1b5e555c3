package bucketgate

// MaxPlanName is the longest plan name, in bytes.
const MaxPlanName = 64

// Plan is a named set of rules that every request of an identity on it is decided
// against, all together: free, pro, enterprise. The configuration document defines
// plans; the registry puts identities on them. The zero Plan is invalid: it has no
// name.
type Plan struct {
	// Name is the plan's name: 1 to MaxPlanName bytes of printable ASCII but '"' and
	// '\', so that it travels as it is in the authorizer context and the 429's body.
	Name string
	// Rules are the plan's own rules (a route may add its own): 1 to MaxRules, with
	// distinct names.
	Rules []Rule
}
