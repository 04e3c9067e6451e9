#!/usr/bin/env bash
# Creates (or replaces) the Secrets the local overlay needs, with fresh random values, in the
# namespace content-platform of the current kubectl context:
#   versitygw-credentials, internal-secrets, redis-users, content-service-secrets, auth-service-secrets, session-service-secrets,
#   content-platform-tls (self-signed for content.localtest.me), content-service-receipt-signer (a
#   receipt signing key and its self-signed certificate, kept in .local/k8s-receipt-signer/ to
#   verify receipts with), dev-jwks (the dev key's public JWKS, so that tokens from `pnpm token` are
#   accepted).
# Nothing here is for production: there, create the Secrets from k8s/secrets/*.env.example.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
NS=${NAMESPACE:-content-platform}
HOST=${INGRESS_HOST:-content.localtest.me}

apply() { kubectl -n "$NS" create "$@" --dry-run=client -o yaml | kubectl apply -f -; }
random() { node -e 'process.stdout.write(require("node:crypto").randomBytes(24).toString("base64url"))'; }

kubectl get namespace "$NS" >/dev/null 2>&1 || kubectl create namespace "$NS"

s3_key=local-$(random | cut -c1-12)
s3_secret=$(random)
# versitygw's root account (k8s/overlays/local/backing/versitygw.yaml); the content-service uses it as its S3 keys.
apply secret generic versitygw-credentials --from-literal=ROOT_ACCESS_KEY="$s3_key" --from-literal=ROOT_SECRET_KEY="$s3_secret"
# A Redis user per service (k8s/overlays/local/backing/redis.yaml), each service's REDIS_URL names its own.
redis_content=$(random); redis_session=$(random); redis_auth=$(random)
apply secret generic redis-users --from-literal=REDIS_PASSWORD_CONTENT_SERVICE="$redis_content" \
  --from-literal=REDIS_PASSWORD_SESSION_SERVICE="$redis_session" --from-literal=REDIS_PASSWORD_AUTH_SERVICE="$redis_auth"
apply secret generic content-service-secrets \
  --from-literal=REDIS_URL="redis://content-service:$redis_content@redis:6379" \
  --from-literal=S3_ACCESS_KEY_ID="$s3_key" --from-literal=S3_SECRET_ACCESS_KEY="$s3_secret" \
  --from-literal=WEBHOOK_SECRET_KEYS="$(random)"
# One internal secret per calling service (k8s/secrets/internal-secrets.env.example).
apply secret generic internal-secrets --from-literal=AUTH_TO_SESSION="$(random)" \
  --from-literal=CONTENT_TO_SESSION="$(random)"
apply secret generic auth-service-secrets --from-literal=MONGODB_URL=mongodb://mongodb:27017/ --from-literal=REDIS_URL="redis://auth-service:$redis_auth@redis:6379"
apply secret generic session-service-secrets --from-literal=MONGODB_URL=mongodb://mongodb:27017/ --from-literal=REDIS_URL="redis://session-service:$redis_session@redis:6379"

tls=$(mktemp -d)
trap 'rm -rf "$tls"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=$HOST" -addext "subjectAltName=DNS:$HOST" \
  -keyout "$tls/tls.key" -out "$tls/tls.crt" 2>/dev/null
apply secret tls content-platform-tls --cert="$tls/tls.crt" --key="$tls/tls.key"

# The receipt signing key (EC P-256) and its self-signed certificate: made once, kept locally so that
# receipts can be checked against it (openssl cms -verify ... -CAfile .local/k8s-receipt-signer/tls.crt).
signer=.local/k8s-receipt-signer
if [ ! -f "$signer/tls.crt" ]; then
  mkdir -p "$signer"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -sha256 \
    -subj "/CN=Content Platform receipts (local cluster)" -addext keyUsage=critical,digitalSignature \
    -keyout "$signer/tls.key" -out "$signer/tls.crt" 2>/dev/null
fi
apply secret tls content-service-receipt-signer --cert="$signer/tls.crt" --key="$signer/tls.key"

# The dev key pair is made on first use by `pnpm token`; only its public half goes to the cluster.
if [ ! -f .local/dev-keys/jwks.json ]; then
  node scripts/token.js --owner 00000000-0000-4000-8000-000000000000 >/dev/null
fi
apply configmap dev-jwks --from-file=jwks.json=.local/dev-keys/jwks.json
echo "secrets for $NS created; the S3 keys and Redis passwords changed, so restart everything that was running:" >&2
echo "  kubectl -n $NS rollout restart deployment" >&2
