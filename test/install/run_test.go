//go:build !unit

package install

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// TestInstalledComponentsRun installs config/default on an API server without Prow's CRD (as
// most clusters are) and runs the shipped binary as each Deployment runs it: its args (the
// kubelet's $(VAR) expansion done here), its downward-API environment, its own service
// account (the kubeconfig impersonates it), only the listen addresses moved to free loopback
// ports. The controller must become ready, take the leader election Lease and name its own
// image, pinned by digest, for the creation Jobs; the API server must serve its pages; and
// neither may log a forbidden request.
func TestInstalledComponentsRun(t *testing.T) {
	objs := kustomizeBuild(t, filepath.Join(root, "config", "default"))
	if err := apply(context.Background(), objs); err != nil {
		t.Fatal(err)
	}
	deploys := deployments(t, objs)
	runComponents(t, deploys["release-controller-controller"], deploys["release-controller-api"], "release-controller@"+digest)
}

// runComponents runs the controller and the API server as their Deployments say (see
// TestInstalledComponentsRun); the controller's log must name wantImage for the creation Jobs.
func runComponents(t *testing.T, controller, api *appsv1.Deployment, wantImage string) {
	t.Helper()
	t.Run("controller", func(t *testing.T) {
		d := controller
		probes, metrics := freeAddr(t), freeAddr(t)
		p := startAsDeployment(t, d, "--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
		waitOK(t, p, http.DefaultClient, "http://"+probes+"/readyz")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			lease := &coordinationv1.Lease{}
			err := admin.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: manager.LeaderElectionID}, lease)
			if err == nil && lease.Spec.HolderIdentity != nil && strings.HasPrefix(*lease.Spec.HolderIdentity, hostname()) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the controller did not take the Lease %s/%s (%v); its log:\n%s", d.Namespace, manager.LeaderElectionID, err, p.Tail(40))
			case <-time.After(200 * time.Millisecond):
			}
		}
		if want := `"buildImage":"` + wantImage + `"`; !strings.Contains(p.Log(), want) {
			t.Errorf("the controller's log does not name the creation Jobs' image %s:\n%s", wantImage, p.Tail(40))
		}
		stopAndCheckLog(t, p)
	})

	t.Run("api", func(t *testing.T) {
		listen := freeAddr(t)
		p := startAsDeployment(t, api, "--listen="+listen)
		waitOK(t, p, http.DefaultClient, "http://"+listen+"/healthz")
		waitOK(t, p, http.DefaultClient, "http://"+listen+"/")
		stopAndCheckLog(t, p)
	})
}

// hostname is this machine's name, which starts the leader election's holder identity.
func hostname() string {
	name, _ := os.Hostname()
	return name
}

// startAsDeployment starts the binary as d's pod would run it, plus extra args.
func startAsDeployment(t *testing.T, d *appsv1.Deployment, extra ...string) *testbinary.Process {
	t.Helper()
	pod := runningPod(t, d)
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod.Name
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = pod.Namespace
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		default:
			t.Fatalf("%s: env %s from %v is not played here", d.Name, e.Name, e.ValueFrom)
		}
	}
	mounts := secretMounts(t, d)
	args := make([]string, 0, len(c.Args)+len(extra)+2)
	for _, a := range c.Args {
		a = expand(a, env)
		for mountPath, dir := range mounts {
			a = strings.ReplaceAll(a, mountPath+"/", dir+"/")
			if name, value, ok := strings.Cut(a, "="); ok && value == mountPath {
				a = name + "=" + dir
			}
		}
		args = append(args, a)
	}
	args = append(args, extra...)
	args = append(args, "--kubeconfig", serviceAccountKubeconfig(t, d.Namespace, d.Spec.Template.Spec.ServiceAccountName))
	cmd := testbinary.Command(releaseController(t), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p, err := testbinary.StartCommand(cmd, filepath.Join(t.TempDir(), d.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	return p
}

// secretMounts plays the kubelet's Secret volumes of d's container: each Secret's keys are
// written as files to a folder of their own, returned by the volume's mount path.
func secretMounts(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	secrets := map[string]string{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	mounts := map[string]string{}
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		name, ok := secrets[m.Name]
		if !ok {
			continue
		}
		secret := &corev1.Secret{}
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: name}, secret); err != nil {
			t.Fatalf("Deployment %s mounts Secret %s: %v", d.Name, name, err)
		}
		dir := t.TempDir()
		for key, data := range secret.Data {
			if err := os.WriteFile(filepath.Join(dir, key), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		mounts[m.MountPath] = dir
	}
	return mounts
}

// varRef is the kubelet's $(VAR) reference in args.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) with env's VAR, as the kubelet does in a container's args.
func expand(arg string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(arg, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// serviceAccountKubeconfig writes a kubeconfig acting as the service account namespace/name:
// the administrator's credentials impersonating it, so RBAC judges the account's requests.
func serviceAccountKubeconfig(t testing.TB, namespace, name string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Impersonate: "system:serviceaccount:" + namespace + ":" + name,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitOK waits up to a minute for url to answer 200 to c.
func waitOK(t testing.TB, p *testbinary.Process, c *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("%s", resp.Status)
		}
		if !p.Running() {
			t.Fatalf("the process ended (%s) before %s answered; its log:\n%s", p.ExitStatus(), url, p.Tail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v after a minute; the log:\n%s", url, err, p.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopAndCheckLog stops p gracefully and fails on a forbidden request in its log.
func stopAndCheckLog(t testing.TB, p *testbinary.Process) {
	t.Helper()
	p.Stop(10 * time.Second)
	for _, line := range strings.Split(p.Log(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("forbidden in the log: %s", line)
		}
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := testbinary.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
