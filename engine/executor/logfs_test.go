package executor

import "testing"

func TestContainerLogLayout(t *testing.T) {
	const root = "/var/log/pods"
	cases := []struct {
		name, path string
		want       bool
	}{
		{"<ns>_<name>_<uid>/<container>/<N>.log is the layout", "/var/log/pods/ns_web_uid1/app/0.log", true},
		{"a later restart count is the layout", "/var/log/pods/ns_web_uid1/app/12.log", true},
		{"a file directly in the pod logs dir is not", "/var/log/pods/shadow", false},
		{"a file directly in a pod dir is not", "/var/log/pods/ns_web_uid1/0.log", false},
		{"a file one level deeper is not", "/var/log/pods/ns_web_uid1/app/x/0.log", false},
		{"a file not named <N>.log is not", "/var/log/pods/ns_web_uid1/app/shadow", false},
		{"a negative count is not", "/var/log/pods/ns_web_uid1/app/-1.log", false},
		{"a pod dir without namespace and name is not", "/var/log/pods/uid1/app/0.log", false},
		{"a path climbing out is not", "/var/log/pods/ns_web_uid1/../../../etc/0.log", false},
		{"a path outside is not", "/etc/ns_web_uid1/app/0.log", false},
		{"a relative path is not", "ns_web_uid1/app/0.log", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, ok := containerLogLayout(root, tc.path); ok != tc.want {
				t.Errorf("containerLogLayout(%q) = %v, want %v", tc.path, ok, tc.want)
			}
		})
	}
}
