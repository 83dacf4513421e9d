package v1alpha1

import "testing"

func TestSignedMessage(t *testing.T) {
	msg := SignedMessage("0123456789ABCDEF", 2)
	if msg != "signed by 0123456789ABCDEF (signature-2)" {
		t.Errorf("SignedMessage = %q", msg)
	}
	if key, n, ok := ParseSignedMessage(msg); !ok || key != "0123456789ABCDEF" || n != 2 {
		t.Errorf("ParseSignedMessage(%q) = %q, %d, %v", msg, key, n, ok)
	}
	for _, other := range []string{"", "not signed: the payload failed its audit", "signed by K (signature-0)", "signed by K (signature-1) and more", "signed by  (signature-1)"} {
		if _, _, ok := ParseSignedMessage(other); ok {
			t.Errorf("ParseSignedMessage(%q) read a signature", other)
		}
	}
}
