#!/bin/sh
# Creates the scene bucket if it does not exist. The AWS CLI reads AWS_ENDPOINT_URL,
# AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment.
set -eu
: "${BUCKET:?BUCKET is required}"

if aws s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
  echo "s3-init: bucket ${BUCKET} exists"
  exit 0
fi

# us-east-1 is the one region S3 refuses an explicit LocationConstraint for.
if [ "${AWS_DEFAULT_REGION}" = "us-east-1" ]; then
  aws s3api create-bucket --bucket "$BUCKET"
else
  aws s3api create-bucket --bucket "$BUCKET" \
    --create-bucket-configuration "LocationConstraint=${AWS_DEFAULT_REGION}"
fi
echo "s3-init: bucket ${BUCKET} created"
