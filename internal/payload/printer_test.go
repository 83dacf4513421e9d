//go:build !unit

package payload_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// table is the server-side table kubectl get prints.
type table struct {
	ColumnDefinitions []struct {
		Name     string `json:"name"`
		Priority int    `json:"priority"`
	} `json:"columnDefinitions"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
}

// TestPrinterColumns asks the API server for the table `kubectl get releasepayloads` prints.
func TestPrinterColumns(t *testing.T) {
	ns := env.Namespace(t)
	accepted(t, ns, tag)

	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+"/apis/release-controller.dev/v1alpha1/namespaces/"+ns+"/releasepayloads", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", req.URL, resp.Status)
	}
	var tbl table
	if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range tbl.ColumnDefinitions {
		if c.Priority == 0 {
			columns = append(columns, c.Name)
		}
	}
	g := NewWithT(t)
	g.Expect(columns).To(Equal([]string{"Name", "Stream", "Phase", "Accepted", "Age"}))
	g.Expect(tbl.Rows).To(HaveLen(1))
	g.Expect(tbl.Rows[0].Cells[:4]).To(Equal([]any{tag, "nightly", "Accepted", "True"}))
}
