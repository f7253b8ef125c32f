package cloudprovider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTypedErrors(t *testing.T) {
	base := errors.New("boom")
	ice := NewInsufficientCapacityError(base, "m5.large/zone-a/spot", "m5.large/zone-b/spot")
	notFound := NewNodeClaimNotFoundError(base)
	notReady := NewNodeClassNotReadyError(base)
	create := NewCreateError(base, "InsufficientFreeAddressesInSubnet", "subnet full")

	tests := []struct {
		name   string
		err    error
		is     func(error) bool
		ignore func(error) error
	}{
		{"insufficient capacity", ice, IsInsufficientCapacityError, IgnoreInsufficientCapacityError},
		{"not found", notFound, IsNodeClaimNotFoundError, IgnoreNodeClaimNotFoundError},
		{"node class not ready", notReady, IsNodeClassNotReadyError, IgnoreNodeClassNotReadyError},
		{"create", create, IsCreateError, IgnoreCreateError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrapped := fmt.Errorf("launching nodeclaim x: %w", tt.err)
			if !tt.is(tt.err) || !tt.is(wrapped) {
				t.Errorf("Is does not recognise %v", wrapped)
			}
			if tt.ignore(wrapped) != nil {
				t.Errorf("Ignore kept %v", wrapped)
			}
			if !errors.Is(wrapped, base) {
				t.Errorf("%v does not unwrap to its cause", wrapped)
			}
			for _, other := range tests {
				if other.name != tt.name && other.is(tt.err) {
					t.Errorf("%s is also seen as %s", tt.name, other.name)
				}
			}
			if tt.ignore(base) != base || tt.is(nil) || tt.ignore(nil) != nil {
				t.Errorf("helpers misbehave on unrelated or nil errors")
			}
		})
	}
	if !strings.Contains(ice.Error(), "m5.large/zone-a/spot, m5.large/zone-b/spot") {
		t.Errorf("insufficient capacity error does not name its offerings: %s", ice)
	}
	if ce := AsCreateError(fmt.Errorf("x: %w", create)); ce == nil || ce.ConditionReason != "InsufficientFreeAddressesInSubnet" {
		t.Errorf("AsCreateError = %+v", ce)
	}
}
