// Package deploy tests the Kubernetes chart in deploy/helm/splathost without a cluster: its
// tests render the chart with Helm's engine and decode every object strictly into the
// k8s.io/api types (chart_test.go, values_test.go). It lives in the tools module because Helm
// and the Kubernetes API types are heavy dependencies the product module does not carry.
package deploy
