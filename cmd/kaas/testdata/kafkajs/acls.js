'use strict'
// node acls.js <broker>
//
// Covers kafkajs's ACL admin calls: createAcls (a prefixed topic ACL and a
// group ACL for User:js), describeAcls with an ANY filter, deleteAcls by
// principal, and describeAcls again. Prints one JSON line:
//   {"described":[{resourceType,resourceName,resourcePatternType,acls}...],"deleted":n,"after":n}
const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = require('kafkajs')
const { newKafka, run } = require('./common')

const broker = process.argv[2]
if (!broker) {
  process.stderr.write('usage: node acls.js <broker>\n')
  process.exit(2)
}

const anyFilter = {
  resourceType: AclResourceTypes.ANY,
  resourcePatternType: ResourcePatternTypes.ANY,
  operation: AclOperationTypes.ANY,
  permissionType: AclPermissionTypes.ANY
}

async function main () {
  const admin = newKafka(broker).admin()
  await admin.connect()
  await admin.createAcls({
    acl: [
      { resourceType: AclResourceTypes.TOPIC, resourceName: 'js-', resourcePatternType: ResourcePatternTypes.PREFIXED, principal: 'User:js', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW },
      { resourceType: AclResourceTypes.GROUP, resourceName: 'js-group', resourcePatternType: ResourcePatternTypes.LITERAL, principal: 'User:js', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW }
    ]
  })
  const described = await admin.describeAcls(anyFilter)
  const del = await admin.deleteAcls({ filters: [{ ...anyFilter, principal: 'User:js' }] })
  const after = await admin.describeAcls(anyFilter)
  await admin.disconnect()
  const deleted = del.filterResponses.reduce((n, r) => n + r.matchingAcls.length, 0)
  process.stdout.write(JSON.stringify({ described: described.resources, deleted, after: after.resources.length }) + '\n')
}

run(main, 30000)
