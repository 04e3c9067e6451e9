# Certificates and kubeconfigs of the local cluster (sourced by up.sh): one CA for every client
# and server of the control plane, a second for the aggregation layer's front proxy, and the
# service account signing key. All made fresh with each cluster.
make_pki() {
  mkdir -p "$PKI"
  local ossl="openssl"
  ca() { # NAME CN
    $ossl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=$2" -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
  }
  cert() { # NAME CA SUBJECT [SANS]
    local name=$1 ca=$2 subject=$3 sans=${4:-} ext
    ext=$(mktemp)
    { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
      if [ -n "$sans" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$sans"
      else echo "extendedKeyUsage=clientAuth"; fi; } >"$ext"
    $ossl req -new -newkey rsa:2048 -nodes -subj "$subject" -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
    $ossl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial -days 30 \
      -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
    rm -f "$ext" "$PKI/$name.csr"
  }
  ca ca content-platform-cluster-ca
  ca front-proxy-ca content-platform-cluster-front-proxy-ca
  cert apiserver ca "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP"
  cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert admin ca "/O=system:masters/CN=cluster-admin"
  cert controller-manager ca "/CN=system:kube-controller-manager"
  cert scheduler ca "/CN=system:kube-scheduler"
  cert kube-proxy ca "/CN=system:kube-proxy"
  cert kubelet ca "/O=system:nodes/CN=system:node:$NODE_NAME"
  cert front-proxy-client front-proxy-ca "/CN=front-proxy-client"
  $ossl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  $ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  local who server
  for who in admin controller-manager scheduler kube-proxy kubelet; do
    server=https://$NODE_IP:$API_PORT
    # The admin's kubeconfig is used from the host, through the forward on loopback.
    [ "$who" = admin ] && server=https://127.0.0.1:$API_PORT
    cat >"$STATE/$who.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
  - name: content-platform
    cluster:
      server: $server
      certificate-authority: $PKI/ca.crt
users:
  - name: $who
    user:
      client-certificate: $PKI/$who.crt
      client-key: $PKI/$who.key
contexts:
  - name: content-platform
    context: {cluster: content-platform, user: $who}
current-context: content-platform
YAML
  done
  # The kubeconfig whose server is reached from inside the namespace (nsenter ... kubectl).
  sed "s#https://127.0.0.1:$API_PORT#https://$NODE_IP:$API_PORT#" "$STATE/admin.kubeconfig" >"$STATE/admin-in-ns.kubeconfig"
}
