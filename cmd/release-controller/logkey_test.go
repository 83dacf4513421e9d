package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestLogKeySecret(t *testing.T) {
	tests := []struct {
		name, flag, podNamespace string
		want                     types.NamespacedName
		wantErr                  bool
	}{
		{name: "a name in a pod: the pod's namespace", flag: "key", podNamespace: "release-controller-system",
			want: types.NamespacedName{Namespace: "release-controller-system", Name: "key"}},
		{name: "a name outside a pod: default", flag: "key", want: types.NamespacedName{Namespace: "default", Name: "key"}},
		{name: "a namespace and a name", flag: "ops/key", podNamespace: "release-controller-system", want: types.NamespacedName{Namespace: "ops", Name: "key"}},
		{name: "no name", flag: "ops/", wantErr: true},
		{name: "no namespace", flag: "/key", wantErr: true},
		{name: "not a name", flag: "Key!", wantErr: true},
		{name: "a path", flag: "a/b/c", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNamespace)
			got, err := logKeySecret(tt.flag)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("logKeySecret(%q) = %v, %v; want %v (error: %v)", tt.flag, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
