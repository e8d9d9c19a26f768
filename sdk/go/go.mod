module github.com/splathost/splathost/sdk/go

go 1.26.8
